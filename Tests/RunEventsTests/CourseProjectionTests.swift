import DeviceFiles
import Foundation
import RunEvents
import SeededRandom
import Testing

@Suite("Courses: GeoJSON and GPX paths, projection of fixes with monotone progress")
struct CourseProjectionTests {
    /// Milan, Arco della Pace: the courses below start here.
    static let origin = GeoPoint(latitude: 45.4755, longitude: 9.1725)

    /// The point `east` and `north` metres from `origin`.
    static func offset(_ east: Double, _ north: Double, from origin: GeoPoint = origin) -> GeoPoint {
        let radians = Double.pi / 180
        return GeoPoint(
            latitude: origin.latitude + north / GeoPoint.earthRadius / radians,
            longitude: origin.longitude + east / (GeoPoint.earthRadius * cos(origin.latitude * radians)) / radians
        )
    }

    @Test func lengthIsTheHaversineSumAndBadCoursesNameTheirField() throws {
        let degree = try GeoPath(coordinates: [[9, 45], [9, 46]])
        #expect(abs(degree.lengthMeters - 111_195) < 1)
        let cases: [([[Double]], String)] = [
            ([[9, 45]], "path.coordinates"),
            ([[9, 45], [9, 91]], "path.coordinates[1]"),
            ([[9, 45], [181, 45]], "path.coordinates[1]"),
            ([[9, 45], [9]], "path.coordinates[1]"),
            ([[9, 45], [9, 45.00001]], "path.coordinates"),  // about a metre: too short
            ([[9, 45], [.nan, 45]], "path.coordinates[1]"),
        ]
        for (coordinates, field) in cases {
            #expect(throws: PathError.self) { try GeoPath(coordinates: coordinates) }
            do { _ = try GeoPath(coordinates: coordinates) } catch { #expect(error.field == field, "\(coordinates)") }
        }
    }

    @Test func gpxTracksAndRoutesAreRead() throws {
        let track = """
            <?xml version="1.0" encoding="UTF-8"?>
            <gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1">
              <trk><name>Sempione</name><trkseg>
                <trkpt lat="45.4755" lon="9.1725"><ele>120</ele></trkpt>
                <trkpt lat="45.4800" lon="9.1800"/>
              </trkseg></trk>
              <trk><trkseg><trkpt lat="1" lon="1"/></trkseg></trk>
            </gpx>
            """
        #expect(
            try CoursePath.points(from: Array(track.utf8), format: .gpx) == [
                GeoPoint(latitude: 45.4755, longitude: 9.1725), GeoPoint(latitude: 45.48, longitude: 9.18),
            ])
        let route = #"<gpx xmlns="http://www.topografix.com/GPX/1/1"><rte><rtept lat="45" lon="9"/><rtept lat="45.1" lon="9"/></rte></gpx>"#
        #expect(try CoursePath.points(from: Array(route.utf8), format: .gpx).count == 2)
        for bad in [
            "<gpx><trk><trkseg><trkpt lat=\"x\" lon=\"9\"/></trkseg></trk></gpx>", "<gpx><trk>", "<kml/>", "<gpx version=\"1.1\"/>", "not xml",
        ] {
            #expect(throws: PathError.self, "\(bad)") { try CoursePath.points(from: Array(bad.utf8), format: .gpx) }
        }
    }

    @Test func jitterNeverMovesARunnerBackwards() throws {
        let path = try GeoPath(points: [Self.origin, Self.offset(1000, 0)])
        let projection = CourseProjection(path: path)
        let first = projection.project(Self.offset(500, 8), after: nil, reach: nil)
        #expect(abs(first.distanceMeters - 500) < 0.5 && abs(first.offsetMeters - 8) < 0.5)
        let jitter = projection.project(Self.offset(490, -5), after: first.distanceMeters, reach: 40)
        #expect(jitter.distanceMeters == first.distanceMeters)
        let off = projection.project(Self.offset(520, 80), after: first.distanceMeters, reach: 40)
        #expect(off.offsetMeters > CourseProjection.offCourseMeters)
    }

    @Test func outAndBackAndLoopCoursesResolveToTheLegTheRunnerIsOn() throws {
        // Out 1 km east, back along the same street: every point of the way back is also on the way out.
        let outAndBack = try GeoPath(points: [Self.origin, Self.offset(1000, 0), Self.origin])
        let projection = CourseProjection(path: outAndBack)
        #expect(projection.project(Self.offset(3, 2), after: nil, reach: nil).distanceMeters < 5)  // the start, not the finish
        var along: Double? = nil
        for metre in stride(from: 0.0, through: 2000, by: 30) {
            let east = metre <= 1000 ? metre : 2000 - metre
            let position = projection.project(Self.offset(east, 4), after: along, reach: 30 + 20)
            #expect(abs(position.distanceMeters - metre) < 10, "at \(metre) m")
            along = position.distanceMeters
        }
        #expect((along ?? 0) >= outAndBack.lengthMeters - CourseProjection.finishToleranceMeters)

        // A 400 m square lap: the start and the finish are the same place.
        let lap = try GeoPath(points: [Self.origin, Self.offset(100, 0), Self.offset(100, 100), Self.offset(0, 100), Self.origin])
        let track = CourseProjection(path: lap)
        #expect(track.project(Self.origin, after: nil, reach: nil).distanceMeters == 0)
        #expect(track.project(Self.offset(2, 1), after: 390, reach: 30).distanceMeters > 395)
    }

    /// A runner at a steady pace on a winding course, fixes with up to 10 m of noise every 5 s:
    /// progress never goes back and stays close to the truth.
    @Test(arguments: 0..<50) func progressFollowsTheTruthOnRandomCourses(seed: Int) throws {
        var random = SplitMix64(seed: UInt64(seed))
        var points = [Self.origin]
        var heading = Double.random(in: 0..<(2 * .pi), using: &random)
        for _ in 0..<30 {
            heading += Double.random(in: -1.2...1.2, using: &random)
            let step = Double.random(in: 80...400, using: &random)
            let last = points.last!
            points.append(Self.offset(step * cos(heading), step * sin(heading), from: last))
        }
        let path = try GeoPath(points: points)
        let projection = CourseProjection(path: path)
        let speed = Double.random(in: 2.5...5.5, using: &random), interval = 5.0
        var along: Double?
        var truth = 0.0
        while truth < path.lengthMeters {
            let noise = Self.offset(Double.random(in: -7...7, using: &random), Double.random(in: -7...7, using: &random), from: path.point(at: truth))
            let position = projection.project(noise, after: along, reach: along == nil ? nil : speed * interval * 1.5 + 20)
            #expect(position.distanceMeters >= (along ?? 0))
            #expect(abs(position.distanceMeters - truth) < 40, "seed \(seed) at \(Int(truth)) m of \(Int(path.lengthMeters))")
            along = position.distanceMeters
            truth += speed * interval
        }
    }
}
