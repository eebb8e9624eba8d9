import Synchronization

/// Whether trace spans are made — for requests and SQL statements — and how a statement's span is
/// named. Switched on once at start-up when an exporter is configured (`OTEL_*`), so that with
/// tracing off a request or a statement pays one atomic load and nothing else — no span, no name.
package enum TraceSpans {
    private static let on = Atomic<Bool>(false)

    package static var isOn: Bool { on.load(ordering: .relaxed) }

    package static func enable() { on.store(true, ordering: .relaxed) }

    /// A statement's span name, from its text and never its values (they are bound parameters):
    /// the operation and the first table it names, as OpenTelemetry's database conventions
    /// suggest — `SELECT individuals`, `INSERT INTO samples` → `INSERT samples`, `BEGIN`.
    package static func statementName(of sql: String) -> String {
        var words = sql.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "(" || $0 == ")" || $0 == "," }).prefix(400)
            .makeIterator()
        guard let first = words.next() else { return "SQL" }
        let operation = first.uppercased()
        var previous = operation
        while let word = words.next() {
            let upper = word.uppercased()
            if ["FROM", "INTO", "UPDATE", "JOIN", "TABLE"].contains(previous), !["SELECT", "LATERAL", "ONLY"].contains(upper) {
                return "\(operation) \(word.prefix(63))"
            }
            previous = upper
        }
        return operation.count <= 20 ? operation : "SQL"
    }
}
