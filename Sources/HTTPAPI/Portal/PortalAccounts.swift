import AccessManager

/// The account services both portals share.
struct PortalAccounts {
    let authenticator: Authenticator
    let sessions: SessionService
    let registrations: RegistrationService
    let individuals: IndividualAccounts
    let thirdParties: ThirdPartyAccounts
}
