import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// A request and the policy it became, as its two parties see it.
package struct AccessRequest: Sendable, Equatable {
    package let record: AccessRequestRecord
    package var asked: AccessScope { AccessScope(record: record.asked) }
    package var granted: AccessScope? { record.granted.map(AccessScope.init(record:)) }
}

/// The Access Policy Manager: third parties ask for one individual's data by fiscal code, the
/// individual accepts (possibly narrowing), denies, revokes or blocks. Consent is stored as
/// data with its full history.
package struct AccessRequestService: Sendable {
    let store: AccessRequestStore
    /// How long a request may stay unanswered.
    package let pendingLifetime: Duration

    package init(database: Database, pendingLifetime: Duration = .seconds(30 * 86_400)) {
        self.store = AccessRequestStore(database: database)
        self.pendingLifetime = pendingLifetime
    }

    /// Files a request. The answer is the same whether or not anyone has that fiscal code.
    package func request(
        by party: ThirdPartyID, fiscalCode: FiscalCode, scope: AccessScope, purpose: AccessPurpose, subscribe: Bool, now: Date = Date()
    ) async throws -> AccessRequest {
        do {
            let record = try await store.create(
                NewAccessRequest(
                    thirdPartyId: party.rowId, fiscalCode: fiscalCode.value, purpose: purpose.value, subscribe: subscribe,
                    scope: scope.record, expiresAt: now.addingTimeInterval(Double(pendingLifetime.components.seconds))
                )
            ) { try RequestCreatedNotice($0).message }
            return AccessRequest(record: record)
        } catch let error where DatabaseFailure(error)?.isUniqueViolation == true {
            throw AccessRequestError.duplicatePending
        }
    }

    /// The party's requests, newest first.
    package func requests(of party: ThirdPartyID, status: AccessStatus?, beforeId: Int64?, limit: Int) async throws -> [AccessRequest] {
        try await store.listForParty(thirdPartyId: party.rowId, status: status, beforeId: beforeId, limit: limit)
            .map(AccessRequest.init(record:))
    }

    /// One of the party's requests.
    package func request(of party: ThirdPartyID, id: UUID) async throws -> AccessRequest {
        guard let record = try await store.findForParty(thirdPartyId: party.rowId, publicId: id) else { throw AccessRequestError.notFound }
        return AccessRequest(record: record)
    }

    /// The requests naming the individual, newest first.
    package func requests(for individual: IndividualID, status: AccessStatus?, beforeId: Int64?, limit: Int) async throws -> [AccessRequest] {
        try await store.listForIndividual(individualId: individual.rowId, status: status, beforeId: beforeId, limit: limit)
            .map(AccessRequest.init(record:))
    }

    /// One request naming the individual.
    package func request(for individual: IndividualID, id: UUID) async throws -> AccessRequest {
        guard let record = try await store.findForIndividual(individualId: individual.rowId, publicId: id) else {
            throw AccessRequestError.notFound
        }
        return AccessRequest(record: record)
    }

    /// Accepts a pending request — as asked, or narrowed by `narrowing`, never wider — or denies it.
    package func decide(_ individual: IndividualID, id: UUID, accept: Bool, narrowing: AccessScopeNarrowing) async throws -> AccessRequest {
        let outcome = try await store.decide(individualId: individual.rowId, publicId: id) { record in
            guard accept else { return nil }
            let asked = AccessScope(record: record.asked)
            let grant = try AccessScope(
                kinds: narrowing.kinds ?? asked.kinds,
                dataFrom: narrowing.dataFrom ?? asked.dataFrom,
                dataTo: narrowing.dataTo ?? asked.dataTo,
                accessUntil: narrowing.accessUntil ?? asked.accessUntil
            )
            try grant.check(within: asked)
            return grant.record
        }
        return try Self.result(outcome)
    }

    /// Changes an active grant: fewer kinds, a narrower window, an earlier end — a later one only
    /// with `confirmExtension`, and never beyond what was asked — or the subscription off. Reads
    /// and deliveries follow the new scope at once (a queued delivery is resolved when it is sent).
    package func change(_ individual: IndividualID, id: UUID, change: GrantChange) async throws -> AccessRequest {
        let outcome = try await store.change(individualId: individual.rowId, publicId: id) { record in
            guard let current = record.granted.map(AccessScope.init(record:)) else {
                throw AccessRequestError.notGranted(status: record.status)
            }
            let asked = AccessScope(record: record.asked), wanted = change.narrowing
            let grant = try AccessScope(
                kinds: wanted.kinds ?? current.kinds,
                dataFrom: wanted.dataFrom ?? current.dataFrom,
                dataTo: wanted.dataTo ?? current.dataTo,
                accessUntil: wanted.accessUntil ?? current.accessUntil
            )
            // Types and window only narrow; the end may move later, confirmed, up to what was asked.
            try grant.check(within: current, as: .granted, end: false)
            if let end = current.accessUntil, let until = grant.accessUntil, until > end, !change.confirmExtension {
                throw AccessRequestError.invalid(
                    field: "accessUntil", reason: "is later than the grant's end: extending it needs confirmExtension true")
            }
            try grant.check(within: asked)
            if change.subscribe == true, !record.subscribe {
                throw AccessRequestError.invalid(field: "subscribe", reason: "can only be turned off: the organisation asks for a subscription")
            }
            return (grant.record, change.subscribe ?? record.subscribe)
        }
        return try Self.result(outcome)
    }

    /// Ends an active grant at once.
    package func revoke(_ individual: IndividualID, id: UUID) async throws -> AccessRequest {
        try Self.result(await store.revoke(individualId: individual.rowId, publicId: id))
    }

    /// Blocks an organisation: its pending requests are denied, its grants revoked, its future requests denied.
    package func block(_ individual: IndividualID, organisation: UUID) async throws {
        guard try await store.block(individualId: individual.rowId, organisation: organisation) else {
            throw AccessRequestError.unknownOrganisation
        }
    }

    /// Unblocks an organisation.
    package func unblock(_ individual: IndividualID, organisation: UUID) async throws {
        guard try await store.unblock(individualId: individual.rowId, organisation: organisation) else {
            throw AccessRequestError.notFound
        }
    }

    /// The organisations the individual has blocked.
    package func blocked(by individual: IndividualID) async throws -> [(organisation: UUID, name: String, since: Date)] {
        try await store.blocked(individualId: individual.rowId)
    }

    private static func result(_ outcome: AccessRequestStoreOutcome) throws -> AccessRequest {
        switch outcome {
        case .changed(let record): return AccessRequest(record: record)
        case .notFound: throw AccessRequestError.notFound
        case .wrongState(let current): throw AccessRequestError.wrongState(current: current)
        }
    }
}

/// What the individual may change when accepting: each field, when given, replaces the asked one.
package struct AccessScopeNarrowing: Sendable {
    package var kinds: [DataKind]?
    package var dataFrom: Date?
    package var dataTo: Date?
    package var accessUntil: Date?

    package init() {}
}

/// What an individual changes in an active grant: each scope field, when given, replaces the
/// granted one; `subscribe` false turns the subscription off; a later end needs `confirmExtension`.
package struct GrantChange: Sendable {
    package var narrowing = AccessScopeNarrowing()
    package var subscribe: Bool?
    package var confirmExtension = false

    package init() {}
}

/// The purpose a party states, shown to the individual: 1–2000 characters, lines allowed.
package struct AccessPurpose: Sendable, Equatable {
    package let value: String

    package init(parsing raw: String) throws(InvalidValue) {
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw InvalidValue("must say why the data is wanted") }
        guard raw.count <= 2000 else { throw InvalidValue("must be at most 2000 characters") }
        guard !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && $0 != "\n" }) else {
            throw InvalidValue("must not contain control characters")
        }
        value = trimmed
    }
}
