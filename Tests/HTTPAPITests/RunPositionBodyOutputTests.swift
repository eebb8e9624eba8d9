import Data4HelpCore
import Foundation
import Testing

@testable import HTTPAPI
@testable import RunEvents

/// The answer to a runner's post writes itself (`JSONOutput`): the same bytes as the encoder's.
@Suite struct RunPositionBodyOutputTests {
    @Test func postAnswersAreTheEncodersBytes() throws {
        var generator = SystemRandomNumberGenerator()
        func maybe<T>(_ value: T) -> T? { Bool.random(using: &generator) ? value : nil }
        let startsAt = Date(timeIntervalSince1970: 1_800_000_000)
        for _ in 0..<500 {
            // Stored times carry microseconds; the rest as a runner's posts leave them.
            let time = { startsAt.addingTimeInterval(Double(Int64.random(in: -1_000_000...20_000_000_000, using: &generator)) / 1e6) }
            let record = RunnerStateRecord(
                runnerId: UUID(), displayName: JSONOutputTests.awkwardStrings.randomElement(using: &generator)!, lastFixAt: maybe(time()),
                latitude: maybe(Double.random(in: -90...90, using: &generator)),
                longitude: maybe(JSONOutputTests.awkwardNumbers.randomElement(using: &generator)!),
                distanceMeters: [0, 49.99, 50, 1 / 3, Double.random(in: 0...50_000, using: &generator)].randomElement(using: &generator)!,
                firstFixAt: maybe(time()), offCourse: Bool.random(using: &generator), finishedAt: maybe(time()), droppedFixes: 0
            )
            var state = RunnerState(record, startsAt: startsAt, lengthMeters: [0, 2_200, 42_195].randomElement(using: &generator)!)
            state.rank = maybe(Int.random(in: 1...5_000, using: &generator))
            let body = PositionBatchBody(
                PositionBatchResult(
                    accepted: Int.random(in: 0...1_000, using: &generator),
                    dropped: .init(duplicate: Int.random(in: 0...9, using: &generator), implausible: 1, inaccurate: 0, outsideRun: 1_000),
                    state: state))
            var output = JSONOutput()
            body.write(to: &output)
            let encoded = Array(try WireFormat.encoder().encode(body))
            #expect(output.bytes == encoded, "\(String(decoding: output.bytes, as: UTF8.self)) vs \(String(decoding: encoded, as: UTF8.self))")
        }
    }
}
