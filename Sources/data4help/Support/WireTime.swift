import Foundation

extension Date {
    /// RFC 3339 in UTC with milliseconds, as the API writes and reads times (the demo and the
    /// benchmarks speak the API like a client).
    var wireTime: String {
        formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
