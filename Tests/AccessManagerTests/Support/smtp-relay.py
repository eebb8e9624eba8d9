"""A relay for SMTPTransportTests: CPython's own smtpd (an SMTP server we did not write).

Listens on a free loopback port (printed on the first line), parses each message with the
standard library's e-mail parser and writes what it read as JSON into the directory given.
A recipient whose local part is "refused" is answered 550 after DATA, as a relay refusing
the message for good would.
"""
import asyncore, email, email.policy, json, os, sys, uuid
import warnings
warnings.simplefilter("ignore", DeprecationWarning)
import smtpd  # noqa: E402  (deprecated in 3.11, still the standard library's server)

out = sys.argv[1]


class Relay(smtpd.SMTPServer):
    def process_message(self, peer, mailfrom, rcpttos, data, **kwargs):
        if any(r.startswith("refused@") for r in rcpttos):
            return "550 5.1.1 refused by the test relay"
        message = email.message_from_bytes(data, policy=email.policy.default)
        record = {
            "mailFrom": mailfrom, "rcptTo": rcpttos, "subject": message["Subject"], "to": message["To"],
            "from": message["From"], "messageId": message["Message-ID"], "date": message["Date"],
            "contentType": message.get_content_type(), "body": message.get_content(),
        }
        path = os.path.join(out, f"{uuid.uuid4()}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(record, f)
        os.rename(path + ".tmp", path)


relay = Relay(("127.0.0.1", 0), None, decode_data=False, enable_SMTPUTF8=False)
print(relay.socket.getsockname()[1], flush=True)
asyncore.loop()
