import DatabaseLink
import Testing

/// A statement's span is named from its text — the operation and the first table — and never
/// holds a value (values are bound parameters; the text is the same for every call).
@Suite("Statement span names")
struct TraceSpansTests {
    @Test(arguments: [
        ("SELECT id, email FROM individuals WHERE id = $1", "SELECT individuals"),
        ("INSERT INTO samples (individual_id, start) VALUES ($1, $2) ON CONFLICT DO NOTHING", "INSERT samples"),
        ("UPDATE webhook_deliveries SET attempt = attempt + 1 WHERE id = $1", "UPDATE webhook_deliveries"),
        ("DELETE FROM access_tokens WHERE token_hash = $1", "DELETE access_tokens"),
        ("WITH due AS (SELECT id FROM sos_incidents FOR UPDATE SKIP LOCKED) UPDATE sos_incidents SET x = 1", "WITH sos_incidents"),
        ("SELECT * FROM (SELECT 1) AS one", "SELECT"),  // a subquery is not a table
        ("BEGIN", "BEGIN"),
        ("  \n", "SQL"),
    ])
    func names(sql: String, expected: String) {
        #expect(TraceSpans.statementName(of: sql) == expected)
    }
}
