import Foundation

/// Blood glucose over a period as SVG text, drawn on the server like the other charts: the
/// individual's target range shaded, the readings as a line (broken where an hour passes without
/// one, as a CGM's trace is) with a dot per reading when they are few (a meter's), and the
/// consensus's 54 and 250 mg/dL bounds as dashed lines.
enum GlucoseChart {
    static let width = 640.0, height = 280.0, left = 48.0, right = 16.0, top = 16.0, bottom = 32.0
    /// A gap longer than this breaks the line.
    static let gapMs: Int64 = 3_600_000

    /// The chart of `readings` (oldest first, mg/dL) from `fromMs` to `toMs`, with the range
    /// `low`–`high` shaded; `ticks` label the time axis (position in ms, text). Empty without readings.
    static func svg(
        _ readings: [(timeMs: Int64, value: Float)], fromMs: Int64, toMs: Int64, low: Double, high: Double, ticks: [(timeMs: Int64, label: String)]
    ) -> String {
        guard !readings.isEmpty, toMs > fromMs else { return "" }
        let values = readings.map { Double($0.value) }
        let floor = min(40, (values.min() ?? 40) - 10), ceiling = max(300, (values.max() ?? 300) + 20)
        let x = { (timeMs: Int64) in left + Double(timeMs - fromMs) / Double(toMs - fromMs) * (width - left - right) }
        let y = { (value: Double) in top + (ceiling - value) / (ceiling - floor) * (height - top - bottom) }
        let lowest = values.min() ?? 0, highest = values.max() ?? 0
        var svg = """
            <svg class="chart glucose" viewBox="0 0 \(whole(width)) \(whole(height))" role="img" \
            aria-label="Blood glucose, \(readings.count) readings from \(whole(lowest)) to \(whole(highest)) mg/dL; target range \(whole(low))–\(whole(high)) mg/dL">\
            <title>Blood glucose, target range \(whole(low))–\(whole(high)) mg/dL shaded</title>\
            <rect class="range" x="\(f(left))" y="\(f(y(high)))" width="\(f(width - left - right))" height="\(f(y(low) - y(high)))"><title>Target range \(whole(low))–\(whole(high)) mg/dL</title></rect>
            """
        for bound in [54.0, 250.0] where bound > floor && bound < ceiling {
            svg += #"<line class="bound" x1="\#(f(left))" x2="\#(f(width - right))" y1="\#(f(y(bound)))" y2="\#(f(y(bound)))"/>"#
        }
        for value in [floor, low, high, ceiling].map({ $0.rounded() }) {
            svg += #"<text class="tick" x="\#(f(left - 6))" y="\#(f(y(value) + 4))" text-anchor="end">\#(whole(value))</text>"#
        }
        for tick in ticks where tick.timeMs >= fromMs && tick.timeMs <= toMs {
            svg +=
                #"<text class="tick" x="\#(f(x(tick.timeMs)))" y="\#(f(height - 10))" text-anchor="middle">\#(AggregateChart.escape(tick.label))</text>"#
        }
        var segment: [String] = [], previous: Int64?
        func flush() {
            if segment.count > 1 { svg += #"<polyline class="glucose-line" points="\#(segment.joined(separator: " "))"/>"# }
            segment = []
        }
        for reading in readings {
            if let previous, reading.timeMs - previous > gapMs { flush() }
            segment.append("\(f(x(reading.timeMs))),\(f(y(Double(reading.value))))")
            previous = reading.timeMs
        }
        flush()
        if readings.count <= 200 {
            for reading in readings {
                let value = Double(reading.value)
                let kind = value < low ? "below" : value > high ? "above" : "in"
                svg +=
                    #"<circle class="glucose-reading \#(kind)" cx="\#(f(x(reading.timeMs)))" cy="\#(f(y(value)))" r="3"><title>\#(whole(value)) mg/dL</title></circle>"#
            }
        }
        svg += #"<line class="axis" x1="\#(f(left))" x2="\#(f(width - right))" y1="\#(f(height - bottom))" y2="\#(f(height - bottom))"/></svg>"#
        return svg
    }

    private static func f(_ value: Double) -> String { String(format: "%.1f", value) }

    private static func whole(_ value: Double) -> String {
        value.formatted(.number.precision(.fractionLength(0)).grouping(.never))
    }
}
