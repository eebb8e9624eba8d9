/// The essence of a `Content-Type` (RFC 9110 §8.3.1): type and subtype without parameters,
/// lower-cased, so `Application/GPX+XML; charset=utf-8` reads `application/gpx+xml`. Every place
/// that picks a reader by media type compares this, never the raw header.
package enum MediaType {
    package static func essence(of contentType: String) -> String {
        contentType.prefix { $0 != ";" }.filter { !$0.isWhitespace }.lowercased()
    }
}
