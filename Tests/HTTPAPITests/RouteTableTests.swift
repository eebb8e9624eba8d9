import HTTPTypes
import Testing

@testable import HTTPAPI

@Suite("The methods a path allows (405's Allow), as the router resolves it")
struct RouteTableTests {
    @Test func aLiteralSegmentWinsOverAParameter() {
        let table = RouteTable()
        table.record("/me/runs/{runId}", .get)
        table.record("/me/runs/{runId}", .post)
        table.record("/me/runs/course", .post)
        table.record("/me/runs/new", .get)
        table.record("/me/runs/new", .post)
        // Schemathesis found `Allow: GET, POST, POST, HEAD` on /me/runs/course.
        #expect(table.allowedMethods(for: "/me/runs/course") == [.post])
        #expect(table.allowedMethods(for: "/me/runs/new") == [.get, .post, .head])
        #expect(table.allowedMethods(for: "/me/runs/0e8598cc-8ffe-427d-b764-8acb11176d00") == [.get, .post, .head])
        #expect(table.allowedMethods(for: "/me/nothing").isEmpty)
    }
}
