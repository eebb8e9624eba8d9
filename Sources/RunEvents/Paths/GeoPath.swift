import Foundation

/// A WGS84 position.
package struct GeoPoint: Sendable, Equatable, Hashable {
    package let latitude: Double
    package let longitude: Double

    package init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    /// Mean Earth radius (IUGG), metres.
    package static let earthRadius = 6_371_008.8

    /// Great-circle distance in metres (haversine).
    package func distance(to other: GeoPoint) -> Double {
        let φ1 = latitude * .pi / 180, φ2 = other.latitude * .pi / 180
        let Δφ = φ2 - φ1, Δλ = (other.longitude - longitude) * .pi / 180
        let a = sin(Δφ / 2) * sin(Δφ / 2) + cos(φ1) * cos(φ2) * sin(Δλ / 2) * sin(Δλ / 2)
        return 2 * Self.earthRadius * atan2(sqrt(a), sqrt(max(0, 1 - a)))
    }
}

/// Why a course cannot be used, naming the field (`path.coordinates[3]`, `path`).
package struct PathError: Error, Equatable, Sendable {
    package let field: String
    package let reason: String

    package init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }
}

/// A run's course: at least two valid points, with the distance from the start to every vertex.
/// Only exists valid (parse, don't validate).
package struct GeoPath: Sendable, Equatable {
    package static let maximumPoints = 20_000
    package static let maximumLength = 1_000_000.0

    package let points: [GeoPoint]
    /// `cumulative[i]`: metres along the course from the start to `points[i]`.
    package let cumulative: [Double]

    package var lengthMeters: Double { cumulative.last ?? 0 }

    /// From GeoJSON `LineString` coordinates: `[lon, lat]` or `[lon, lat, altitude]` each.
    package init(coordinates: [[Double]], field: String = "path.coordinates") throws(PathError) {
        var points: [GeoPoint] = []
        points.reserveCapacity(coordinates.count)
        for (index, pair) in coordinates.enumerated() {
            guard pair.count == 2 || pair.count == 3 else {
                throw PathError(field: "\(field)[\(index)]", reason: "must be [longitude, latitude] (GeoJSON order), optionally with an altitude")
            }
            points.append(GeoPoint(latitude: pair[1], longitude: pair[0]))
        }
        try self.init(points: points, field: field)
    }

    package init(points: [GeoPoint], field: String = "path.coordinates") throws(PathError) {
        guard points.count >= 2 else { throw PathError(field: field, reason: "needs at least 2 points") }
        guard points.count <= Self.maximumPoints else { throw PathError(field: field, reason: "has more than \(Self.maximumPoints) points") }
        var cumulative = [0.0]
        cumulative.reserveCapacity(points.count)
        for (index, point) in points.enumerated() {
            guard point.latitude.isFinite, (-90...90).contains(point.latitude) else {
                throw PathError(field: "\(field)[\(index)]", reason: "latitude must be from -90 to 90")
            }
            guard point.longitude.isFinite, (-180...180).contains(point.longitude) else {
                throw PathError(field: "\(field)[\(index)]", reason: "longitude must be from -180 to 180")
            }
            if index > 0 { cumulative.append(cumulative[index - 1] + points[index - 1].distance(to: point)) }
        }
        guard let length = cumulative.last, length >= 10 else { throw PathError(field: field, reason: "the course must be at least 10 m long") }
        guard length <= Self.maximumLength else { throw PathError(field: field, reason: "the course may be at most 1000 km long") }
        self.points = points
        self.cumulative = cumulative
    }

    /// The point `meters` along the course (clamped to its ends), interpolated on its segment.
    package func point(at meters: Double) -> GeoPoint {
        guard meters > 0 else { return points[0] }
        guard meters < lengthMeters, let index = cumulative.lastIndex(where: { $0 <= meters }), index < points.count - 1 else {
            return points[points.count - 1]
        }
        let span = cumulative[index + 1] - cumulative[index]
        let fraction = span > 0 ? (meters - cumulative[index]) / span : 0
        let a = points[index], b = points[index + 1]
        return GeoPoint(latitude: a.latitude + (b.latitude - a.latitude) * fraction, longitude: a.longitude + (b.longitude - a.longitude) * fraction)
    }

    /// GeoJSON coordinates, `[lon, lat]` each.
    package var coordinates: [[Double]] { points.map { [$0.longitude, $0.latitude] } }
}
