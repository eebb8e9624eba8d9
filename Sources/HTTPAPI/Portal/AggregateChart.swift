import Foundation
import HealthSharing

/// An aggregate answer as an SVG bar chart, drawn on the server (no script, no library): one
/// bar per group (or per histogram bin, or quantile) with its 95 % interval as an error bar.
/// Groups below the threshold are not in the answer, so they are not drawn.
enum AggregateChart {
    /// One bar: its label, value and 95 % interval.
    struct Bar: Equatable {
        var label: String
        var value: Double?
        var low: Double?
        var high: Double?
    }

    /// The bars of an answer: histogram bins of its first group, else one bar per group
    /// (count, mean or sum), else quantiles of its first group.
    static func bars(statistic: String, groups: [AggregateAnswer.Group]) -> [Bar] {
        func label(_ group: AggregateAnswer.Group) -> String {
            group.key.map { $0.sorted { $0.key < $1.key }.map(\.value).joined(separator: " · ") } ?? "all"
        }
        switch statistic {
        case "histogram":
            return (groups.first?.histogram ?? []).map { bin in
                Bar(
                    label: "\(short(bin.from))–\(short(bin.to))", value: Double(bin.count),
                    low: bin.interval.first.map(Double.init), high: bin.interval.last.map(Double.init))
            }
        case "quantiles":
            return (groups.first?.quantiles ?? []).map { quantile in
                Bar(label: "p\(short(quantile.p * 100))", value: quantile.value, low: quantile.interval.first, high: quantile.interval.last)
            }
        case "count":
            return groups.map { group in
                Bar(
                    label: label(group), value: Double(group.count),
                    low: group.countInterval.first.map(Double.init), high: group.countInterval.last.map(Double.init))
            }
        default:
            return groups.map { group in
                Bar(
                    label: label(group), value: group.value,
                    low: group.interval?.first, high: group.interval?.last)
            }
        }
    }

    /// The chart as an SVG element (every text escaped); `title` names it for screen readers.
    static func svg(_ bars: [Bar], title: String, unit: String?) -> String {
        guard !bars.isEmpty else { return "" }
        let width = 640.0, height = 320.0, left = 64.0, bottom = 72.0, top = 16.0, right = 16.0
        let plotHeight = height - top - bottom, slot = (width - left - right) / Double(bars.count)
        let highest = max(bars.compactMap { $0.high ?? $0.value }.max() ?? 1, 1e-9)
        let lowest = min(bars.compactMap { $0.low ?? $0.value }.min() ?? 0, 0)
        func y(_ value: Double) -> Double { top + plotHeight * (1 - (value - lowest) / (highest - lowest)) }
        var svg =
            #"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 \#(Int(width)) \#(Int(height))" role="img" aria-labelledby="chart-title">"#
        svg += #"<title id="chart-title">\#(escape(title))</title>"#
        for tick in 0...4 {
            let value = lowest + (highest - lowest) * Double(tick) / 4
            svg += #"<line x1="\#(left)" x2="\#(width - right)" y1="\#(f(y(value)))" y2="\#(f(y(value)))" class="grid"/>"#
            svg += #"<text x="\#(left - 6)" y="\#(f(y(value) + 4))" text-anchor="end" class="tick">\#(escape(short(value)))</text>"#
        }
        if let unit {
            svg +=
                #"<text x="12" y="\#(f(top + plotHeight / 2))" transform="rotate(-90 12 \#(f(top + plotHeight / 2)))" text-anchor="middle" class="tick">\#(escape(unit))</text>"#
        }
        for (index, bar) in bars.enumerated() {
            let x = left + slot * Double(index), centre = x + slot / 2, barWidth = slot * 0.6
            if let value = bar.value {
                svg +=
                    #"<rect x="\#(f(centre - barWidth / 2))" y="\#(f(min(y(value), y(0))))" width="\#(f(barWidth))" height="\#(f(abs(y(0) - y(value))))" class="bar"><title>\#(escape(bar.label)): \#(escape(short(value)))</title></rect>"#
                if let low = bar.low, let high = bar.high {
                    let cap = min(barWidth / 3, 8)
                    svg +=
                        #"<path d="M\#(f(centre)) \#(f(y(low)))V\#(f(y(high)))M\#(f(centre - cap)) \#(f(y(low)))h\#(f(2 * cap))M\#(f(centre - cap)) \#(f(y(high)))h\#(f(2 * cap))" class="error-bar"/>"#
                }
            }
            svg +=
                #"<text x="\#(f(centre))" y="\#(f(height - bottom + 16))" text-anchor="end" transform="rotate(-35 \#(f(centre)) \#(f(height - bottom + 16)))" class="tick">\#(escape(bar.label))</text>"#
        }
        svg += #"<line x1="\#(left)" x2="\#(width - right)" y1="\#(f(y(0)))" y2="\#(f(y(0)))" class="axis"/></svg>"#
        return svg
    }

    private static func f(_ value: Double) -> String { String(format: "%.1f", value) }

    /// A figure as a label: no needless decimals.
    static func short(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e12 ? String(Int64(value)) : String(format: abs(value) >= 100 ? "%.0f" : "%.2f", value)
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
