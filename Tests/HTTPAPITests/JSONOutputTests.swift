import Data4HelpCore
import Foundation
import NIOCore
import Testing

@testable import HTTPAPI

/// The listings' own JSON writer against Foundation's `JSONEncoder` configured as every other
/// response is (`WireFormat.encoder()`): the same page must give the same bytes.
@Suite struct JSONOutputTests {
    private static func encoderBytes(_ value: some Encodable) throws -> [UInt8] {
        Array(try WireFormat.encoder().encode(value))
    }

    private static func writtenBytes(_ page: some WrittenPage) -> [UInt8] {
        var buffer = page.written()
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }

    /// Strings a client may have sent as a source name: quotes, backslashes, every control
    /// character, slashes, DEL, accents, a character outside the BMP, an empty one.
    static let awkwardStrings: [String] = [
        "", "Apple Watch", #"say "hi""#, #"back\slash"#, "a/b//c", "\u{7F}", "è é ü", "😀 run", "line\nbreak\ttab\r",
        String((0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) }), "\u{2028}\u{2029}", "</script>",
    ]

    /// Values as stored samples have them (float4 widened) and edge numbers of the format.
    static let awkwardNumbers: [Double] = [
        0, -0.0, 72, 0.97, 99.088, 1e-7, 1e21, 1e16, 123_456_789_012.5, 5e-324, .greatestFiniteMagnitude, -40.5,
        Double(Float(36.6)), Double(Float(0.1)), 2.5e-5, 1 / 3,
    ]

    @Test func samplePagesAreTheEncodersBytes() throws {
        var generator = SystemRandomNumberGenerator()
        var pages: [Page<SampleBody>] = [Page(items: [], nextCursor: nil)]
        for round in 0..<300 {
            let items = (0..<Int.random(in: 1...12, using: &generator)).map { index -> SampleBody in
                let number =
                    index.isMultiple(of: 2)
                    ? Self.awkwardNumbers.randomElement(using: &generator)!
                    : Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &generator))
                let start = Int64.random(in: WireFormat.firstTimestampMilliseconds..<WireFormat.endTimestampMilliseconds, using: &generator)
                return SampleBody(
                    type: ["heartRate", "sleep", "bloodPressureSystolic"].randomElement(using: &generator)!,
                    value: round.isMultiple(of: 7) ? .word("deep") : .number(number.isFinite ? number : 1),
                    unit: Bool.random(using: &generator) ? "count/min" : nil,
                    startMs: start,
                    endMs: Bool.random(using: &generator)
                        ? min(start + Int64.random(in: 0...86_400_000), WireFormat.endTimestampMilliseconds - 1) : nil,
                    source: Bool.random(using: &generator) ? Self.awkwardStrings.randomElement(using: &generator)! : nil
                )
            }
            pages.append(Page(items: items, nextCursor: Bool.random(using: &generator) ? "czE6ZGVzYzox-_" : nil))
        }
        for page in pages {
            #expect(Self.writtenBytes(page) == (try Self.encoderBytes(page)))
        }
    }

    @Test func everyAwkwardStringAndNumberIsTheEncodersBytes() throws {
        for source in Self.awkwardStrings {
            for number in Self.awkwardNumbers {
                let page = Page(
                    items: [SampleBody(type: "heartRate", value: .number(number), unit: "count/min", startMs: 0, endMs: 1, source: source)],
                    nextCursor: source
                )
                let written = Self.writtenBytes(page)
                #expect(written == (try Self.encoderBytes(page)), "source \(source.debugDescription), value \(number)")
                #expect((try? JSONSerialization.jsonObject(with: Data(written))) != nil)
            }
        }
    }

    @Test func locationPagesAreTheEncodersBytes() throws {
        var generator = SystemRandomNumberGenerator()
        let pages = (0..<300).map { _ in
            Page(
                items: (0..<Int.random(in: 0...10, using: &generator)).map { _ in
                    LocationFixBody(
                        latitude: Double.random(in: -90...90, using: &generator),
                        longitude: Double.random(in: -180...180, using: &generator),
                        accuracy: Bool.random(using: &generator) ? Double(Float.random(in: 0...500, using: &generator)) : nil,
                        altitude: Bool.random(using: &generator) ? Self.awkwardNumbers.randomElement(using: &generator)! : nil,
                        timeMs: Int64.random(in: -1_000_000_000_000...4_000_000_000_000, using: &generator)
                    )
                },
                nextCursor: Bool.random(using: &generator) ? "bDE6YXNjOjE" : nil
            )
        }
        for page in pages {
            #expect(Self.writtenBytes(page) == (try Self.encoderBytes(page)))
        }
    }

    @Test func timestampsAtTheEdgesOfTheFourDigitYears() {
        for milliseconds: Int64 in [
            WireFormat.firstTimestampMilliseconds, WireFormat.endTimestampMilliseconds - 1, -1, 0, 1, 951_782_400_000, 1_709_164_800_999,
        ] {
            var output = JSONOutput()
            output.timestamp(milliseconds: milliseconds)
            #expect(String(decoding: output.bytes, as: UTF8.self) == "\"\(WireFormat.timestamp(milliseconds: milliseconds))\"")
        }
    }
}

/// The profile (`GET /api/users/me`) writes itself too: the same bytes as the encoder's.
@Suite struct ProfileBodyOutputTests {
    @Test func profilesAreTheEncodersBytes() throws {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<300 {
            // Stored times carry microseconds; some whole seconds, some just below one.
            let created = Double(Int64.random(in: 0...4_102_444_800_000_000, using: &generator)) / 1e6
            let updated = round.isMultiple(of: 3) ? created.rounded(.down) : created + Double.random(in: 0...1e6, using: &generator)
            let record = IndividualRecord(
                id: 1, publicId: UUID(), email: "p\(round)@example.test",
                fiscalCode: "RSSMRA80A01H501U", fullName: JSONOutputTests.awkwardStrings.randomElement(using: &generator)!, birthDate: "1980-01-01",
                sex: "female", homeArea: "Milano / Città Studi", timeZone: "Europe/Rome", aggregatesOptOut: Bool.random(using: &generator),
                maximumHeartRate: Bool.random(using: &generator) ? JSONOutputTests.awkwardNumbers.randomElement(using: &generator)! : nil,
                createdAt: Date(timeIntervalSince1970: created), updatedAt: Date(timeIntervalSince1970: updated))
            let body = IndividualProfileBody(record)
            var output = JSONOutput()
            body.write(to: &output)
            let encoded = Array(try WireFormat.encoder().encode(body))
            #expect(output.bytes == encoded, "\(String(decoding: output.bytes, as: UTF8.self)) vs \(String(decoding: encoded, as: UTF8.self))")
        }
    }
}
