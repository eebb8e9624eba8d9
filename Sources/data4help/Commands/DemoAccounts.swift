import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing
import Logging

/// `data4help seed --demo`: accounts a newcomer can sign in with at once — an organisation on
/// `/portal`, an individual on `/me` with a week of heart rate and steps and a request from the
/// organisation waiting for a decision — and a population large enough for aggregate queries to
/// be answered even grouped by sex (3,000 people: each group must exceed 1,000). Running it
/// again adds nothing twice.
struct DemoAccounts {
    static let organisationEmail = "demo-lab@data4help.example"
    static let individualEmail = "demo@data4help.example"
    static let password = "demo password 2026"
    /// A well-formed codice fiscale (check character included) for the demo person.
    static let fiscalCode = "BNCLRA90A41F205I"
    static let populationTag = "demo"
    static let population = 3_000

    let database: Database
    let logger: Logger

    func seed(now: Date = Date()) async throws {
        let hasher = PasswordHasher()
        let seeder = PopulationSeeder(database: database)
        let seeded = try await seeder.seededIds(tag: Self.populationTag).count
        if seeded < Self.population {
            print("seeding \(Self.population - seeded) individuals with 60 days of heart rate and steps, for aggregate queries…")
            try await seeder.seed(individuals: Self.population - seeded, days: 60, tag: Self.populationTag, startingAt: seeded)
        }

        let organisations = ThirdPartyAccounts(database: database, hasher: hasher)
        let organisation: ThirdPartyRecord?
        do {
            organisation = try await organisations.register(
                ThirdPartyRegistration(
                    name: try OrganisationName(parsing: "Demo Cardio Lab"), email: try EmailAddress(parsing: Self.organisationEmail),
                    password: try Password(parsing: Self.password)
                ))
        } catch AccountError.alreadyRegistered {
            organisation = nil
        }

        let individuals = IndividualAccounts(database: database, hasher: hasher)
        let person: IndividualRecord?
        do {
            person = try await individuals.register(
                IndividualRegistration(
                    email: try EmailAddress(parsing: Self.individualEmail), password: try Password(parsing: Self.password),
                    fiscalCode: try FiscalCode(parsing: Self.fiscalCode), fullName: try PersonName(parsing: "Laura Bianchi"),
                    birthDate: try BirthDate(parsing: "1990-01-01"), sex: try Sex(parsing: "female"), homeArea: try AreaCode(parsing: "IT-MI")
                ))
        } catch AccountError.alreadyRegistered {
            person = nil
        }

        if let person {
            // A week of readings: heart rate every 15 minutes (lower at night), steps every hour.
            let individual = IndividualID(rowId: person.id)
            let manager = DataManager(database: database, partitions: PartitionMaintainer(database: database), events: StoredDataEvents())
            let hour = 3_600.0, start = (now.timeIntervalSince1970 / hour).rounded(.down) * hour - 7 * 24 * hour
            var items: [RawIngestItem] = []
            for quarter in 0..<(7 * 24 * 4) {
                let time = Date(timeIntervalSince1970: start + Double(quarter) * 900)
                let hourOfDay = Calendar(identifier: .gregorian).component(.hour, from: time)
                let night = hourOfDay < 7 || hourOfDay >= 23
                items.append(Self.item("heartRate", (night ? 56 : 72) + Double(quarter % 7), unit: "bpm", at: time))
                if quarter % 4 == 0, !night {
                    items.append(
                        Self.item("stepCount", Double(300 + (quarter * 37) % 900), unit: "count", at: time, end: time.addingTimeInterval(hour)))
                }
            }
            _ = try await manager.ingest(items, for: individual, now: now)
        }

        if let organisation, person != nil {
            let requests = AccessRequestService(database: database)
            _ = try await requests.request(
                by: ThirdPartyID(rowId: organisation.id),
                fiscalCode: try FiscalCode(parsing: Self.fiscalCode),
                scope: try AccessScope(kinds: [.sample(.heartRate), .sample(.stepCount)], dataFrom: nil, dataTo: nil, accessUntil: nil),
                purpose: try AccessPurpose(parsing: "Resting heart rate study: how activity during the day relates to heart rate at night."),
                subscribe: true
            )
        }
    }

    static func item(_ type: String, _ value: Double, unit: String, at time: Date, end: Date? = nil) -> RawIngestItem {
        var item = RawIngestItem()
        item.type = RawSampleType(type)
        item.value = .number(value)
        item.unit = unit
        item.start = RawInstant(time.formatted(Date.ISO8601FormatStyle(timeZone: .gmt)))
        item.end = end.map { RawInstant($0.formatted(Date.ISO8601FormatStyle(timeZone: .gmt))) }
        item.source = "demo"
        return item
    }

    /// What to print once seeded.
    static func summary(base: String) -> String {
        """
        Demo accounts (password "\(password)" for both):
          organisation  \(organisationEmail)  →  \(base)/portal/login   (keys, requests, aggregates, webhook)
          individual    \(individualEmail)  →  \(base)/me/login        (a request waiting for a decision, my data, AutomatedSOS)
        """
    }
}
