import AccessManager
import Foundation
import Testing

@Suite("Account values parse only when valid")
struct ValueParsingTests {
    @Test(arguments: ["RSSMRA85T10A562S", "rssmra85t10a562s", "RSS MRA 85T10 A562S", "MRTMTT91D08F205J"])
    func acceptsValidCodiceFiscale(_ raw: String) throws {
        let code = try FiscalCode(parsing: raw)
        #expect(code.value == raw.uppercased().replacingOccurrences(of: " ", with: ""))
    }

    @Test func acceptsOmocodiaSubstitutions() {
        // A digit replaced by its omocodia letter (2 → N) is still a codice fiscale: exactly
        // one check letter makes it valid.
        let valid = "ABCDEFGHIJKLMNOPQRSTUVWXYZ".filter { (try? FiscalCode(parsing: "RSSMRA85T10A56N" + String($0))) != nil }
        #expect(valid.count == 1)
    }

    @Test func rejectsWrongCheckCharacter() {
        #expect(throws: InvalidValue("has a wrong check character")) { try FiscalCode(parsing: "RSSMRA85T10A562T") }
    }

    @Test(arguments: ["RSSMRA85Z10A562S", "RSSMRA8XT10A562S", "AB1", "ÀBC12345", "", "ABCDEFGHIJKLMNOPQRSTU1", "ABCDEFG"])
    func rejectsMalformedCodes(_ raw: String) {
        #expect(throws: InvalidValue.self) { try FiscalCode(parsing: raw) }
    }

    @Test(arguments: ["X1234567", "AB123456C", "12345"])
    func acceptsGenericNationalIds(_ raw: String) throws {
        #expect(try FiscalCode(parsing: raw).value == raw)
    }

    @Test func normalisesEmailAddresses() throws {
        #expect(try EmailAddress(parsing: "  Ada@Example.ORG ").value == "ada@example.org")
    }

    @Test(arguments: ["ada", "ada@", "@example.org", "ada@example", "a b@example.org", "ada@@example.org", "ada@example..org"])
    func rejectsBadEmailAddresses(_ raw: String) {
        #expect(throws: InvalidValue.self) { try EmailAddress(parsing: raw) }
    }

    @Test func passwordsNeedTenCharacters() throws {
        #expect(throws: InvalidValue("must be at least 10 characters")) { try Password(parsing: "short") }
        #expect(try Password(parsing: "ten chars!").value == "ten chars!")
        #expect(throws: InvalidValue.self) { try Password(parsing: String(repeating: "x", count: 1025)) }
        #expect("\(try Password(parsing: "a secret value"))" == "<password>")
    }

    /// NIST SP 800-63B: no whitespace-only, invisible or breached passwords (the attacker's list).
    @Test(arguments: [
        String(repeating: " ", count: 10), String(repeating: "\u{200B}", count: 10),
        "abc\u{200B}\u{200B}\u{200B}\u{200B}\u{200B}\u{200B}\u{202E}\u{FEFF}",
        "1234567890", "password12", "Password12", "QWERTYUIOP", "aaaaaaaaaaaa", "a          ",
    ])
    func weakPasswordsAreRefused(_ raw: String) {
        #expect(throws: InvalidValue.self) { try Password(parsing: raw) }
    }

    @Test func namesRefuseInvisibleAndDirectionCharacters() throws {
        #expect(throws: InvalidValue.self) { try PersonName(parsing: "Ada \u{202E}issoR") }
        #expect(throws: InvalidValue.self) { try PersonName(parsing: "Ada\u{200B}Rossi") }
        #expect(throws: InvalidValue.self) { try OrganisationName(parsing: "Acme\u{2066}Labs") }
        #expect(try PersonName(parsing: "می\u{200C}خواهم").value == "می\u{200C}خواهم")  // the non-joiner Persian needs stays
    }

    @Test func birthDatesAreRealPastDays() throws {
        let today = ISO8601DateFormatter().date(from: "2026-06-01T00:00:00Z")!
        #expect(try BirthDate(parsing: "2000-02-29", today: today).value == "2000-02-29")
        #expect(throws: InvalidValue("is not a calendar date")) { try BirthDate(parsing: "2001-02-29", today: today) }
        #expect(throws: InvalidValue("must not be in the future")) { try BirthDate(parsing: "2026-06-02", today: today) }
        #expect(throws: InvalidValue.self) { try BirthDate(parsing: "1899-12-31", today: today) }
        #expect(throws: InvalidValue.self) { try BirthDate(parsing: "10/12/1985", today: today) }
    }

    @Test func areaCodesAreISOSubdivisions() throws {
        #expect(try AreaCode(parsing: "it-mi").value == "IT-MI")
        #expect(try AreaCode(parsing: "GB-LND").value == "GB-LND")
        for bad in ["IT", "ITA-MI", "IT-MILANO", "Via Roma 1, Milano"] {
            #expect(throws: InvalidValue.self) { try AreaCode(parsing: bad) }
        }
    }

    @Test func timeZonesMustBeKnown() throws {
        #expect(try TimeZoneName(parsing: "Europe/Rome").value == "Europe/Rome")
        #expect(throws: InvalidValue.self) { try TimeZoneName(parsing: "Mars/Olympus") }
    }
}
