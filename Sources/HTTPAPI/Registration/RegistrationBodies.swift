import AccessManager
import Foundation
import Hummingbird

/// The answer to `POST …/registration` on both surfaces: the same whatever is already registered.
struct RegistrationReceiptBody: ResponseEncodable {
    /// Always `confirmationSent`: a message went to the address (a link, or a notice).
    let status = "confirmationSent"
    let email: String
    /// Until when the link in the message works.
    let expiresAt: Date

    init(_ receipt: RegistrationReceipt) {
        email = receipt.email
        expiresAt = receipt.expiresAt
    }
}

/// `POST …/registration/confirmation`: the token from the confirmation link.
struct ConfirmationBody: Decodable {
    var token: String?

    /// The token, required; its shape is not judged here (an unknown one is answered like a used one).
    func validated() throws(Problem) -> String {
        var fields = FieldValidator()
        let token = fields.required("token", token) { (raw: String) throws(InvalidValue) in
            guard !raw.isEmpty, raw.utf8.count <= 128 else { throw InvalidValue("must be the token from the confirmation link") }
            return raw
        }
        try fields.finish()
        return token!
    }
}
