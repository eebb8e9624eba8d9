import DatabaseLink
import Testing

@Suite("DATABASE_URL parsing")
struct DatabaseURLTests {
    @Test func parsesEveryPart() throws {
        let url = try DatabaseURL(parsing: "postgres://app:p%40ss@db.internal:6543/data4help?sslmode=require")
        #expect(url == DatabaseURL(host: "db.internal", port: 6543, username: "app", password: "p@ss", database: "data4help", tlsMode: .require))
    }

    @Test func defaultsPortAndPrefersTLS() throws {
        let url = try DatabaseURL(parsing: "postgresql://app@localhost/d")
        #expect(url.port == 5432)
        #expect(url.password == nil)
        #expect(url.tlsMode == .prefer)
    }

    @Test(arguments: ["mysql://a@b/c", "postgres://a@b", "postgres://b/c", "postgres://a@b/c?sslmode=sometimes", "not a url"])
    func rejectsWhatItCannotUse(_ text: String) {
        #expect(throws: DatabaseURLError.self) { try DatabaseURL(parsing: text) }
    }

    @Test func errorNeverContainsThePassword() {
        do {
            _ = try DatabaseURL(parsing: "postgres://app:hunter2@host/d?sslmode=bogus")
            Issue.record("expected an error")
        } catch {
            #expect(!error.description.contains("hunter2"))
        }
    }
}
