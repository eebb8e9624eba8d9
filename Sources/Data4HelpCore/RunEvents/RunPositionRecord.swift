import Foundation

/// A position to store, as projected onto the course.
package struct RunPositionRecord: Sendable, Equatable {
    package var timeMs: Int64
    package var latitude: Double
    package var longitude: Double
    package var accuracy: Float?
    package var distanceMeters: Double
    package var offsetMeters: Float

    package init(timeMs: Int64, latitude: Double, longitude: Double, accuracy: Float?, distanceMeters: Double, offsetMeters: Float) {
        self.timeMs = timeMs
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        self.distanceMeters = distanceMeters
        self.offsetMeters = offsetMeters
    }
}
