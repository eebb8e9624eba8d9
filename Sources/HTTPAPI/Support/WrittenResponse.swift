import Data4HelpCore
import Hummingbird

/// A response body that writes itself: answered without the response encoder, in the same bytes.
protocol WrittenResponse: ResponseGenerator, JSONWritable {}

extension WrittenResponse {
    func response(from request: Request, context: some RequestContext) throws -> Response {
        var output = JSONOutput(capacity: 512)
        write(to: &output)
        return Response.json(ByteBuffer(bytes: output.bytes))
    }
}

extension Response {
    /// `200` with a JSON body already written.
    static func json(_ body: ByteBuffer) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8", .contentLength: String(body.readableBytes)],
            body: .init(byteBuffer: body))
    }
}
