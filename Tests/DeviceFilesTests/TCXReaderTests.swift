import DeviceFiles
import Foundation
import Testing

/// TCX as GPSBabel writes it (`make device-fixtures`), and the shapes devices and tools write.
@Suite struct TCXReaderTests {
    /// GPSBabel turned fit-tool's activity into TCX: the same points, heart rates and totals.
    @Test func anActivityFromGPSBabelKeepsPointsHeartRateAndLaps() throws {
        let document = try TCXReader.read(try DeviceFixtures.bytes("gpsbabel-activity.tcx"))
        let records = try #require(try DeviceFixtures.json("fit-tool-activity.json")["records"] as? [[String: Any]])
        let positioned = records.filter { $0["latitude"] is Double }
        #expect(document.format == .tcx && document.tracks.count == 1 && document.routes.isEmpty)
        let points = try #require(document.tracks.first)
        try #require(points.count == positioned.count)
        for (point, record) in zip(points, positioned) {
            #expect(point.time == record["time"] as? String && point.heartRate == record["heartRate"] as? Double)
            #expect(abs((point.latitude ?? .nan) - (record["latitude"] as? Double ?? 0)) < 1e-6)
            #expect(abs((point.elevation ?? .nan) - (record["altitude"] as? Double ?? 0)) < 0.3)
        }
        let summary = try #require(document.summaries.first)
        #expect(summary.sport == "running" && summary.start == "2026-11-20T07:02:11Z" && summary.elapsedSeconds == 599)
        #expect(summary.averageHeartRate == 144 && summary.maximumHeartRate == 160 && summary.distanceMetres == 2860.88)
    }

    /// GPSBabel writes a Garmin track's empty "ACTIVE LOG" as an empty first activity or course:
    /// the path is the first one with points.
    @Test func anEmptyFirstActivityOrCourseIsPassedOver() throws {
        let activity = try TCXReader.read(try DeviceFixtures.bytes("gpsbabel-run.tcx"))
        #expect(activity.tracks.map(\.count) == [0, 3] && activity.firstPath?.count == 3)
        let course = try TCXReader.read(try DeviceFixtures.bytes("gpsbabel-course.tcx"))
        #expect(course.tracks.isEmpty && course.routes.map(\.count) == [0, 3] && course.firstPath?.count == 3)
    }

    @Test func lapsAddUpCoursePointsAreNotPathAndIndoorPointsKeepHeartRate() throws {
        let tcx = """
            \u{FEFF}<?xml version="1.0" encoding="UTF-8"?>
            <tcd:TrainingCenterDatabase xmlns:tcd="http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2">
              <tcd:Activities><tcd:Activity Sport="Biking"><tcd:Id>2026-11-01T08:00:00Z</tcd:Id>
                <tcd:Lap StartTime="2026-11-01T08:00:00Z"><tcd:TotalTimeSeconds>600</tcd:TotalTimeSeconds><tcd:DistanceMeters>5000</tcd:DistanceMeters>
                  <tcd:Calories>100</tcd:Calories><tcd:AverageHeartRateBpm><tcd:Value>120</tcd:Value></tcd:AverageHeartRateBpm>
                  <tcd:MaximumHeartRateBpm><tcd:Value>150</tcd:Value></tcd:MaximumHeartRateBpm>
                  <tcd:Track><tcd:Trackpoint><tcd:Time>2026-11-01T08:00:00Z</tcd:Time><tcd:HeartRateBpm><tcd:Value>99</tcd:Value></tcd:HeartRateBpm></tcd:Trackpoint></tcd:Track>
                </tcd:Lap>
                <tcd:Lap StartTime="2026-11-01T08:10:00Z"><tcd:TotalTimeSeconds>200</tcd:TotalTimeSeconds><tcd:DistanceMeters>1000</tcd:DistanceMeters>
                  <tcd:Calories>50</tcd:Calories><tcd:AverageHeartRateBpm><tcd:Value>160</tcd:Value></tcd:AverageHeartRateBpm>
                  <tcd:MaximumHeartRateBpm><tcd:Value>170</tcd:Value></tcd:MaximumHeartRateBpm></tcd:Lap>
                <tcd:Creator><tcd:Name>Edge 530</tcd:Name></tcd:Creator>
              </tcd:Activity></tcd:Activities>
              <tcd:Courses><tcd:Course><tcd:Name>Loop</tcd:Name>
                <tcd:Lap><tcd:TotalTimeSeconds>1</tcd:TotalTimeSeconds><tcd:DistanceMeters>9999</tcd:DistanceMeters></tcd:Lap>
                <tcd:Track><tcd:Trackpoint><tcd:Position><tcd:LatitudeDegrees>45</tcd:LatitudeDegrees><tcd:LongitudeDegrees>9</tcd:LongitudeDegrees></tcd:Position></tcd:Trackpoint></tcd:Track>
                <tcd:CoursePoint><tcd:Name>Water</tcd:Name><tcd:Position><tcd:LatitudeDegrees>1</tcd:LatitudeDegrees><tcd:LongitudeDegrees>1</tcd:LongitudeDegrees></tcd:Position></tcd:CoursePoint>
              </tcd:Course></tcd:Courses>
              <tcd:Author><tcd:Name>Garmin Connect</tcd:Name></tcd:Author>
            </tcd:TrainingCenterDatabase>
            """
        let document = try TCXReader.read(Array(tcx.utf8))
        #expect(document.creator == "Edge 530" && document.waypoints == 1)
        #expect(
            document.tracks == [
                [
                    {
                        var point = TrackPoint(); point.time = "2026-11-01T08:00:00Z"; point.heartRate = 99; return point
                    }()
                ]
            ])
        #expect(document.routes.map { $0.compactMap(\.position).map { [$0.latitude, $0.longitude] } } == [[[45, 9]]])
        let summary = try #require(document.summaries.first)
        #expect(summary.sport == "cycling" && summary.start == "2026-11-01T08:00:00Z" && summary.elapsedSeconds == 800)
        #expect(summary.distanceMetres == 6000 && summary.energyKilocalories == 150 && summary.maximumHeartRate == 170)
        #expect(summary.averageHeartRate == 130, "laps' averages weighted by their time: (120×600 + 160×200) / 800")
        // The firstPath of this file is the course: the activity's one point has no position.
        #expect(document.firstPath?.count == 1)
    }

    @Test func filesThatAreNotTCXAreRefusedWithAReason() {
        for (text, reason) in [
            ("<gpx/>", "has no <TrainingCenterDatabase> root element"),
            ("<TrainingCenterDatabase><Activities>", "is not well-formed XML"),
            (
                #"<!DOCTYPE t [<!ENTITY a "aaaa">]><TrainingCenterDatabase>&a;</TrainingCenterDatabase>"#,
                "declares XML entities (<!ENTITY …>), which are not accepted"
            ),
        ] {
            #expect(throws: ActivityFileError.self) { try TCXReader.read(Array(text.utf8)) }
            do { _ = try TCXReader.read(Array(text.utf8)) } catch { #expect(error.reason.hasPrefix(reason), "\(error.reason)") }
        }
    }
}
