import Foundation

/// The workout page's two drawings, as SVG text: the route (an equirectangular projection
/// around the route's middle latitude, which keeps a city-sized route's shape) and the heart rate
/// over the workout's time.
enum WorkoutFigures {
    static let width = 640.0, height = 400.0, margin = 16.0

    /// The route as a line, its start and end marked; empty with fewer than two points.
    static func routeSVG(_ points: [(latitude: Double, longitude: Double)]) -> String {
        guard points.count >= 2 else { return "" }
        let latitudes = points.map(\.latitude), longitudes = points.map(\.longitude)
        let (south, north) = (latitudes.min() ?? 0, latitudes.max() ?? 0), (west, east) = (longitudes.min() ?? 0, longitudes.max() ?? 0)
        let squeeze = cos((south + north) / 2 * .pi / 180)
        let spanX = max((east - west) * squeeze, 1e-9), spanY = max(north - south, 1e-9)
        let scale = min((width - 2 * margin) / spanX, (height - 2 * margin) / spanY)
        let offsetX = (width - spanX * scale) / 2, offsetY = (height - spanY * scale) / 2
        let projected = points.map { point in
            (offsetX + (point.longitude - west) * squeeze * scale, offsetY + (north - point.latitude) * scale)
        }
        let line = projected.map { "\(short($0.0)),\(short($0.1))" }.joined(separator: " ")
        let start = projected[0], end = projected[projected.count - 1]
        return """
            <svg class="chart route" viewBox="0 0 640 400" role="img" aria-label="Route of the workout, \(points.count) points">\
            <title>Route, \(points.count) points</title>\
            <polyline class="route-line" points="\(line)" fill="none" stroke="#0969da" stroke-width="3" stroke-linejoin="round"/>\
            <circle class="route-start" cx="\(short(start.0))" cy="\(short(start.1))" r="6" fill="#1a7f37"><title>Start</title></circle>\
            <circle class="route-end" cx="\(short(end.0))" cy="\(short(end.1))" r="6" fill="#cf222e"><title>End</title></circle></svg>
            """
    }

    /// Heart rate (bpm) over seconds from the start, with its lowest and highest values marked,
    /// and the dynamic profiles (seconds from the start) drawn over it.
    static func heartRateSVG(_ samples: [(seconds: Double, bpm: Double)], profiles: [(from: Double, to: Double)] = []) -> String {
        guard samples.count >= 2 else { return "" }
        let chartHeight = 240.0, left = 48.0, bottom = 28.0
        let lowest = samples.map(\.bpm).min() ?? 0, highest = samples.map(\.bpm).max() ?? 0
        let low = (lowest - 5).rounded(.down), high = (highest + 5).rounded(.up)
        let duration = max(samples.map(\.seconds).max() ?? 1, 1)
        let x = { (seconds: Double) in left + seconds / duration * (width - left - margin) }
        let y = { (bpm: Double) in margin + (high - bpm) / max(high - low, 1) * (chartHeight - margin - bottom) }
        let line = samples.map { "\(short(x($0.seconds))),\(short(y($0.bpm)))" }.joined(separator: " ")
        let minutes = whole(duration / 60)
        let overlays = profiles.map { profile -> String in
            let points = samples.filter { $0.seconds >= profile.from && $0.seconds <= profile.to }
            return
                "<polyline class=\"profile-line\" points=\"\(points.map { "\(short(x($0.seconds))),\(short(y($0.bpm)))" }.joined(separator: " "))\" fill=\"none\" stroke=\"#8250df\" stroke-width=\"5\" stroke-opacity=\"0.7\"><title>Dynamic profile</title></polyline>"
        }.joined()
        return """
            <svg class="chart heart-rate" viewBox="0 0 640 240" role="img" \
            aria-label="Heart rate from \(whole(lowest)) to \(whole(highest)) bpm over \(minutes) minutes">\
            <title>Heart rate, \(whole(lowest))–\(whole(highest)) bpm</title>\
            <line class="axis" x1="\(left)" y1="\(chartHeight - bottom)" x2="\(width - margin)" y2="\(chartHeight - bottom)"/>\
            <text class="tick" x="4" y="\(short(y(highest)) + 4)">\(whole(highest))</text>\
            <text class="tick" x="4" y="\(short(y(lowest)) + 4)">\(whole(lowest))</text>\
            <text class="tick" x="\(left)" y="\(chartHeight - 8)">0 min</text>\
            <text class="tick" x="\(width - margin - 48)" y="\(chartHeight - 8)">\(minutes) min</text>\
            <polyline class="heart-rate-line" points="\(line)" fill="none" stroke="#cf222e" stroke-width="2"/>\(overlays)</svg>
            """
    }

    static let zoneColours = ["#8c959f", "#0969da", "#1a7f37", "#bf8700", "#cf222e"]

    /// Time in the five zones as one bar, each zone's share of the measured time.
    static func zonesSVG(_ seconds: [Double]) -> String {
        let total = seconds.reduce(0, +)
        guard total > 0 else { return "" }
        var x = 0.0
        var parts = ""
        for (index, value) in seconds.enumerated() where value > 0 {
            let share = value / total * width
            parts +=
                "<rect class=\"zone zone-\(index + 1)\" x=\"\(short(x))\" y=\"0\" width=\"\(short(share))\" height=\"32\" fill=\"\(zoneColours[index])\">"
                + "<title>Zone \(index + 1): \(whole(value / 60)) min</title></rect>"
            x += share
        }
        return """
            <svg class="chart zones" viewBox="0 0 640 32" role="img" aria-label="Time in heart-rate zones">\(parts)</svg>
            """
    }

    /// A whole number as text (no grouping), whatever the value.
    private static func whole(_ value: Double) -> String {
        value.formatted(.number.precision(.fractionLength(0)).grouping(.never))
    }

    /// One decimal: enough for a drawing 640 units wide.
    private static func short(_ value: Double) -> Double {
        (value * 10).rounded() / 10
    }
}
