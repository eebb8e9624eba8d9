import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// The Event Handler of the design: organisers create, change and cancel events; individuals
/// enrol and withdraw; anyone reads the public listing.
package struct RunEventService: Sendable {
    let store: RunEventStore

    package init(database: Database) {
        self.store = RunEventStore(database: database)
    }

    package func create(_ plan: RunEventPlan, by individual: IndividualID) async throws -> RunEvent {
        try RunEvent(try await store.create(organiserId: individual.rowId, try plan.draft))
    }

    /// Changes an event the asker organises, before it starts; `change` merges the request into
    /// the current event and validates the result.
    package func update(
        _ id: UUID, by individual: IndividualID, change: @escaping (RunEvent) throws -> RunEventPlan
    ) async throws -> RunEvent {
        do {
            return try RunEvent(
                try await store.update(publicId: id, organiserId: individual.rowId) { locked in
                    try RunEventRules.checkEditable(locked)
                    let draft = try change(try RunEvent(locked.event)).draft
                    try RunEventRules.checkCapacity(locked, for: draft)
                    return draft
                })
        } catch let refusal as RunRefusal {
            throw RunEventError.refused(refusal)
        }
    }

    package func cancel(_ id: UUID, by individual: IndividualID) async throws -> RunEvent {
        do {
            return try RunEvent(
                try await store.cancel(
                    publicId: id, organiserId: individual.rowId, decide: { try RunEventRules.mayCancel($0) },
                    notice: { try RunCancelledNotice($0).message }
                ))
        } catch let refusal as RunRefusal {
            throw RunEventError.refused(refusal)
        }
    }

    package func events(of individual: IndividualID, role: RunRole?, before: Int64?, limit: Int) async throws -> [RunEvent] {
        try await store.events(of: individual.rowId, role: role, beforeId: before, limit: limit).map { try RunEvent($0) }
    }

    package func publicEvents(phase: RunPhase?, before: Int64?, limit: Int) async throws -> [RunEvent] {
        let window = phase?.window(at: Date()) ?? RunEventWindow()
        return try await store.publicEvents(in: window, beforeId: before, limit: limit).map { try RunEvent($0) }
    }

    /// The event and its runners (display names only), for anyone.
    package func event(_ id: UUID) async throws -> (event: RunEvent, runners: [RunnerRecord]) {
        guard let record = try await store.event(publicId: id) else { throw RunEventError.notFound }
        return (try RunEvent(record), try await store.runners(runId: record.id))
    }

    package func enrol(in id: UUID, by individual: IndividualID, displayName: String) async throws -> RunnerRecord {
        let name = displayName.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...60).contains(name.count) else { throw RunEventError.invalid(field: "displayName", reason: "must be 1 to 60 characters") }
        do {
            return try await store.enrol(publicId: id, individualId: individual.rowId, displayName: name) { try RunEventRules.checkEnrolment($0) }
        } catch let refusal as RunRefusal {
            throw RunEventError.refused(refusal)
        }
    }

    package func withdraw(from id: UUID, by individual: IndividualID) async throws {
        do {
            try await store.withdraw(publicId: id, individualId: individual.rowId) { try RunEventRules.checkWithdrawal($0) }
        } catch let refusal as RunRefusal {
            throw RunEventError.refused(refusal)
        }
    }
}
