import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird
import NIOCore
import SOSManager

/// `/api/dispatch/incidents/{id}/acknowledge|resolve`: the dispatch centre reports back.
///
/// The centre is not an account: it signs each report (`Data4Help-Signature`, HMAC-SHA256 over
/// `"<t>.POST <path>.<body>"` with the shared dispatch secret, timestamps within 5 minutes), so
/// only the holder of that secret can move an incident, only the incident and verb it signed, and
/// each signature once (replays are refused with 409).
struct DispatchCentreController {
    let incidents: SOSIncidentService
    /// nil when no dispatch centre is configured: every report is refused.
    let secret: String?
    let body: JSONBody

    private struct ReportForm: Decodable {
        var reference: String?
    }

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        for report in [DispatchCentreReport.acknowledged, .resolved] {
            let verb = report == .acknowledged ? "acknowledge" : "resolve"
            group.post(RouterPath("incidents/{incidentId}/\(verb)")) { request, context in
                let bytes = try await body.bytes(of: request) ?? ByteBuffer()
                // The signature covers the method and path too: it cannot move another incident.
                guard let secret, let signature = request.headers[.init(WebhookSignature.header)!],
                    WebhookSignature.verify(
                        header: signature, secret: secret, request: "\(request.method.rawValue) \(request.uri.path)",
                        body: Array(bytes.readableBytesView)
                    )
                else {
                    throw Problem(
                        .unauthorized, slug: "signature", title: "Signature required",
                        detail: "Sign the report with the dispatch secret in the \(WebhookSignature.header) header.")
                }
                let form = bytes.readableBytes == 0 ? ReportForm() : try body.decode(ReportForm.self, bytes: bytes)
                if let reference = form.reference, reference.isEmpty || reference.count > 200 {
                    throw Problem.invalidField("reference", "must be 1 to 200 characters")
                }
                return SOSIncidentBody(
                    try await incidents.record(
                        report, on: try SOSIncidentController.incidentId(context), reference: form.reference, signature: signature
                    ))
            }
        }
    }
}
