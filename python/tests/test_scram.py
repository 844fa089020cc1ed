"""The client's half of SCRAM-SHA-256 (groupcoord.scram): RFC 7677's test
vector byte for byte, and every server message the client must refuse."""

from __future__ import annotations

import base64
import re
import unittest

from groupcoord.scram import MAX_ITERATIONS, MECHANISM, MIN_ITERATIONS, ScramClient, ScramError, escape_user

# RFC 7677, section 3.
USER = "user"
PASSWORD = "pencil"
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
CLIENT_FIRST = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SERVER_FIRST = f"r={SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = f"c=biws,r={SERVER_NONCE},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
SERVER_FINAL = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def vector_client() -> ScramClient:
    return ScramClient(USER, PASSWORD, CLIENT_NONCE)


class Rfc7677VectorTest(unittest.TestCase):
    def test_the_whole_exchange(self) -> None:
        c = vector_client()
        self.assertEqual(c.first(), CLIENT_FIRST)
        self.assertEqual(c.final(SERVER_FIRST, min_iterations=4096), CLIENT_FINAL)
        self.assertIsNone(c.verify_server(SERVER_FINAL))

    def test_defaults(self) -> None:
        self.assertEqual(MECHANISM, "SCRAM-SHA-256")
        self.assertEqual((MIN_ITERATIONS, MAX_ITERATIONS), (10_000, 10_000_000))

    def test_a_fresh_nonce_is_base64_of_18_random_bytes(self) -> None:
        a, b = ScramClient("u", "s"), ScramClient("u", "s")
        self.assertNotEqual(a.nonce, b.nonce)
        for c in (a, b):
            self.assertEqual(len(base64.b64decode(c.nonce, validate=True)), 18)
            self.assertRegex(c.first(), r"^n,,n=u,r=[A-Za-z0-9+/]{24}$")

    def test_user_names_are_escaped(self) -> None:
        self.assertEqual(escape_user("a,b=c"), "a=2Cb=3Dc")
        self.assertEqual(escape_user("=2C"), "=3D2C")  # '=' first, so an escape is never escaped twice
        self.assertEqual(ScramClient("o,p=s", "x", "N").first(), "n,,n=o=2Cp=3Ds,r=N")

    def test_the_secret_stays_out_of_repr(self) -> None:
        self.assertNotIn(PASSWORD, repr(vector_client()))


class RefusalsTest(unittest.TestCase):
    def refuses(self, server_first: str, pattern: str, min_iterations: int = 4096) -> None:
        with self.assertRaises(ScramError) as ctx:
            vector_client().final(server_first, min_iterations=min_iterations)
        self.assertRegex(str(ctx.exception), pattern)

    def test_a_wrong_server_signature(self) -> None:
        c = vector_client()
        c.final(SERVER_FIRST, min_iterations=4096)
        wrong = base64.b64encode(bytes(32)).decode()
        for final, pattern in ((f"v={wrong}", "does not match"),
                               (SERVER_FINAL[:-6] + "AAAAA=", "does not match"),  # its last bytes differ
                               ("v=" + base64.b64encode(bytes(31)).decode(), "does not match"),
                               ("e=invalid-proof", "refused.*invalid-proof"),
                               ("", "no signature"),
                               ("v=***", "not base64"),
                               ("x", "malformed")):
            with self.subTest(final):
                with self.assertRaisesRegex(ScramError, pattern):
                    c.verify_server(final)
        with self.assertRaisesRegex(ScramError, "before final"):
            vector_client().verify_server(SERVER_FINAL)

    def test_a_nonce_that_does_not_extend_ours(self) -> None:
        rest = ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        self.refuses("r=" + CLIENT_NONCE + rest, "does not extend")  # ours alone
        self.refuses("r=" + "X" + SERVER_NONCE[1:] + rest, "does not extend")
        self.refuses("r=" + CLIENT_NONCE[:-1] + rest, "does not extend")
        self.refuses("r=abc" + CLIENT_NONCE + rest, "does not extend")

    def test_iteration_counts_out_of_bounds(self) -> None:
        head = f"r={SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i="
        self.refuses(SERVER_FIRST, "4096 PBKDF2 iterations, outside the 10000", MIN_ITERATIONS)
        self.refuses(head + "9999", "9999 PBKDF2", MIN_ITERATIONS)
        self.refuses(head + "10000001", "10000001 PBKDF2", MIN_ITERATIONS)
        for bad in ("", "-1", "+4096", "4k", "99999999999"):
            with self.subTest(bad):
                self.refuses(head + bad, "iteration count|PBKDF2")
        # The default bound is the connection's: RFC 7677's 4096 is too few.
        with self.assertRaises(ScramError):
            vector_client().final(SERVER_FIRST)

    def test_malformed_server_first_messages(self) -> None:
        cases = {
            "e=other-error": "refused.*other-error",
            "m=ext," + SERVER_FIRST: "extension",
            f"s=W22ZaJ0SNY7soEsUEjb6gQ==,r={SERVER_NONCE},i=4096": "must start r=",
            f"r={SERVER_NONCE},i=4096": "must start r=",
            f"r={SERVER_NONCE},s=***,i=4096": "salt is not base64",
            f"r={SERVER_NONCE},s=,i=4096": "salt is empty",
            f"r={SERVER_NONCE},garbage,i=4096": "not an attribute",
            "": "not an attribute",
            f"r={SERVER_NONCE}\x7f,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096": "printable",
        }
        for message, pattern in cases.items():
            with self.subTest(message):
                self.refuses(message, pattern)

    def test_extensions_after_the_iteration_count_are_signed_as_sent(self) -> None:
        c = vector_client()
        final = c.final(SERVER_FIRST + ",x=later", min_iterations=4096)
        self.assertTrue(final.startswith(f"c=biws,r={SERVER_NONCE},p="))
        self.assertNotEqual(final, CLIENT_FINAL)  # the AuthMessage covers the whole server-first message
        self.assertTrue(re.fullmatch(r".*,p=[A-Za-z0-9+/]{43}=", final))


if __name__ == "__main__":
    unittest.main()
