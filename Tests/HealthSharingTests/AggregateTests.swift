import AccessManager
import Data4HelpCore
import DatabaseLink
import DatabaseTestSupport
import Foundation
import HealthSharing
import PostgresNIO
import Synchronization
import Testing

@Suite("Aggregates: the 1000-individual rule with differential privacy, budgets and audit")
struct AggregateTests {
    static func spec(
        _ statistic: AggregateStatistic = .mean, areas: [String] = [], epsilon: Int = 100, to: String = "2026-10-31",
        groupBy: AggregateDimension? = nil
    ) throws -> AggregateSpec {
        try AggregateSpec(
            type: .sample(.heartRate), statistic: statistic, areas: areas.map { try AreaCode(parsing: $0) }, ageBands: [], sex: nil,
            from: CalendarDay(parsing: "2026-10-01"), to: CalendarDay(parsing: to), groupBy: groupBy, epsilon: Epsilon(hundredths: epsilon)
        )
    }

    // MARK: The threshold, on the mechanism alone

    @Test func groupsAtOrBelowTheMinimumAreAlmostNeverReleased() throws {
        let mechanism = AggregateMechanism(minimumGroup: 1000)
        let spec = try Self.spec(.count, epsilon: 50)
        let threshold = mechanism.releaseThreshold(spec)
        #expect(threshold == 1027)
        func releases(_ size: Int64, _ trials: Int) -> Int {
            (0..<trials).filter { _ in
                mechanism.release([ExactGroup(key: "", individuals: size, centredSum: 0, sum: 0, bins: [])], spec: spec).status == .answered
            }.count
        }
        // A group of 1,000 passes with probability ≤ 10⁻⁶ (exactly: P(noise ≥ 27) ≈ 8.6 × 10⁻⁷): in
        // 200,000 tries about 0.17 releases are expected, and 4 or more would happen with
        // probability below 10⁻⁴ if the noise is right. 1,001 passes with P(noise ≥ 26) ≈ 1.4 × 10⁻⁶.
        #expect(releases(1000, 200_000) <= 3)
        #expect(releases(1001, 100_000) <= 3)
        #expect(releases(5, 10_000) == 0)
        // At the threshold a group passes when the noise is ≥ 0: P = 1 / (1 + e^(-1/2)) ≈ 0.622.
        let atThreshold = Double(releases(threshold, 50_000)) / 50_000
        #expect(abs(atThreshold - 1 / (1 + exp(-0.5))) < 0.01)
        #expect(releases(threshold + 60, 10_000) == 10_000)
    }

    /// The privacy record counts a person in an answer only through a group it released: the
    /// members of a suppressed group were not part of what was published.
    @Test func onlyReleasedGroupsCountTheirMembersInTheAnswer() throws {
        let mechanism = AggregateMechanism(minimumGroup: 1000)
        let spec = try Self.spec(.count, epsilon: 50)
        let big = ExactGroup(key: "IT-MI", individuals: 5_000, centredSum: 0, sum: 0, bins: [], members: [1, 2])
        let small = ExactGroup(key: "DE-BE", individuals: 3, centredSum: 0, sum: 0, bins: [], members: [3])
        for _ in 0..<100 {
            let (answer, released) = mechanism.releasing([big, small], spec: spec)
            #expect(answer.status == .answered && released == ["IT-MI"])
        }
        #expect(mechanism.releasing([small], spec: spec).releasedKeys.isEmpty)
    }

    /// The README's promise: at ε = 1, the mean heart rate of 1,000 people is within about
    /// ±0.65 bpm (95 %), and the reported interval covers the true mean at least 95 % of the time.
    @Test func meanAccuracyAndIntervalCoverageMatchTheReadme() throws {
        let mechanism = AggregateMechanism(minimumGroup: 100)
        let spec = try Self.spec(.mean, epsilon: 100)
        let truth = 70.0
        let group = ExactGroup(key: "", individuals: 1000, centredSum: Int64((truth - 125) * 100 * 1000), sum: 0, bins: [])
        var errors: [Double] = []
        var covered = 0
        for _ in 0..<4000 {
            let released = try #require(mechanism.release([group], spec: spec).groups.first)
            errors.append(abs(released.value! - truth))
            if let interval = released.interval, interval[0] <= truth, truth <= interval[1] { covered += 1 }
        }
        errors.sort()
        #expect(errors[Int(Double(errors.count) * 0.95)] <= 0.72)  // 0.64 by simulation of the same noise
        #expect(Double(covered) / 4000 >= 0.95)
    }

    @Test func aRefusalSaysNothingAboutTheTrueCount() throws {
        let answer = AggregateMechanism(minimumGroup: 1000).release(
            [ExactGroup(key: "", individuals: 999, centredSum: 0, sum: 0, bins: [])], spec: try Self.spec()
        )
        #expect(answer.status == .refused && answer.reason == "group too small" && answer.groups.isEmpty)
    }

    // MARK: Against a real database

    struct Harness {
        let database: Database
        let service: AggregateService
        let individuals: IndividualStore

        /// A new third party (a fresh budget).
        func party() async throws -> ThirdPartyID {
            let record = try await ThirdPartyStore(database: database).insert(name: "Org", email: "org-\(UUID())@example.org", passwordHash: "x")
            return ThirdPartyID(rowId: record.id)
        }

        /// `count` people in `area`, each with a heart rate of `value` every day of October 2026.
        @discardableResult
        func people(_ count: Int, area: String, value: Double) async throws -> [Int64] {
            var ids: [Int64] = []
            for _ in 0..<count {
                let tag = UUID().uuidString.prefix(12).replacingOccurrences(of: "-", with: "")
                ids.append(
                    try await individuals.insert(
                        NewIndividual(
                            email: "\(tag)@example.org", passwordHash: "x", fiscalCode: "T\(tag)".uppercased(), fullName: "T",
                            birthDate: "1950-06-01", sex: "female", homeArea: area
                        )
                    ).id)
            }
            try await setHeartRate(ids, value)
            return ids
        }

        func setHeartRate(_ ids: [Int64], _ value: Double) async throws {
            try await database.query(
                """
                INSERT INTO daily_rollups (individual_id, sample_type, day, sample_count, value_sum, value_min, value_max)
                SELECT i, 1, d::date, 100, 100 * \(value), \(Float(value)), \(Float(value))
                FROM unnest(\(ids)::int8[]) AS i, generate_series('2026-10-01'::date, '2026-10-31'::date, interval '1 day') AS d
                ON CONFLICT (individual_id, sample_type, day) DO UPDATE SET value_sum = EXCLUDED.value_sum
                """)
        }
    }

    func withHarness(minimumGroup: Int64 = 20, budget: PrivacyBudget = PrivacyBudget(), _ body: @Sendable (Harness) async throws -> Void) async throws
    {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 8), logger: TestPostgres.logger)
        try await database.whileRunning {
            let service = AggregateService(database: database, budget: budget, mechanism: AggregateMechanism(minimumGroup: minimumGroup))
            try await body(Harness(database: database, service: service, individuals: IndividualStore(database: database)))
        }
    }

    /// Answers leave their members in the pending list of the privacy record's index; the merger
    /// moves them into the index when it starts, and afterwards once the answers that woke it have
    /// gathered: when none has come for `quiet`, or `longest` after the first (so that no
    /// answer's insert has to merge, and a busy moment's answers are merged at once). Each step is
    /// observed, never assumed after a sleep: under the full suite's load the merger's first look
    /// came after the answers meant for its wake-up. The waits are long beside the checks made
    /// within them (a check 0.3 s into a 4 s wait), so a slow machine cannot fail them.
    @Test func thePopulationIndexIsMergedOnceAnswersHaveGathered() async throws {
        try await withHarness { harness in
            try await harness.people(60, area: "IT-MI", value: 70)
            try await harness.database.query("CREATE EXTENSION IF NOT EXISTS pgstattuple")
            @Sendable func pending() async throws -> Int64 {
                try await harness.database.query(
                    "SELECT pending_tuples FROM pgstatginindex('aggregate_populations_members_idx')"
                )[0].decode(Int64.self)
            }
            @Sendable func answerThree() async throws {
                for _ in 0..<3 {  // each party's own budget
                    let answer = try await harness.service.run(try Self.spec(), for: try await harness.party())
                    #expect(answer.answer.status == .answered)
                }
            }
            @Sendable func waitUntilMerged() async throws -> Duration {
                let started = ContinuousClock.now
                while try await pending() > 0, started.duration(to: .now) < .seconds(30) { try await Task.sleep(for: .milliseconds(50)) }
                return started.duration(to: .now)
            }
            @Sendable func waitForTheMergerToWait(_ answers: ChangeSignal) async throws {
                let deadline = ContinuousClock.now + .seconds(20)
                while answers.waiterCount == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
                #expect(answers.waiterCount == 1, "the merger waits for an answer")
            }
            let options = try await harness.database.query(
                "SELECT reloptions FROM pg_class WHERE relname = 'aggregate_populations_members_idx'")[0].decode([String].self)
            #expect(options == ["gin_pending_list_limit=16384"], "migration 0055: room for a busy moment's answers")
            try await answerThree()
            #expect(try await pending() == 3, "three answers (rows) waiting before the merger runs")
            let (answers, ready) = (ChangeSignal(), StartupGate())
            ready.open()
            var merger = PopulationIndexMerger(database: harness.database, answers: answers, schemaReady: ready, logger: TestPostgres.logger)
            // Its poll beyond the test: only an answer wakes it (with the minute's poll, a whole-suite
            // run slow enough for three answers to take a minute saw them merged by the poll).
            merger.pollInterval = .seconds(3_600)
            merger.quiet = .seconds(4)
            merger.longest = .seconds(8)
            let running = Task { [merger] in try await merger.run() }
            defer { running.cancel() }
            _ = try await waitUntilMerged()
            #expect(try await pending() == 0, "merged by the merger's look at start")
            try await waitForTheMergerToWait(answers)
            // Three answers stay pending until an answer wakes it, and then for its quiet time.
            try await answerThree()
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await pending() == 3, "three answers (rows) waiting for the wake-up")
            answers.notify()
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await pending() == 3, "gathering: no merge within the quiet time after the wake-up")
            let quietMerge = try await waitUntilMerged()
            #expect(try await pending() == 0)
            #expect(quietMerge < .seconds(20))
            // Answers every quarter of a second never leave it quiet: it merges `longest` after the
            // first, not before (at its quiet time) and not never.
            try await waitForTheMergerToWait(answers)
            try await answerThree()
            answers.notify()
            let notifying = Task {
                while !Task.isCancelled {
                    try await Task.sleep(for: .milliseconds(250))
                    answers.notify()
                }
            }
            defer { notifying.cancel() }
            try await Task.sleep(for: .seconds(5))
            #expect(try await pending() == 3, "past the quiet time, answers still coming: gathering")
            let busyMerge = try await waitUntilMerged()
            #expect(try await pending() == 0, "merged at the longest wait, answers still coming")
            #expect(busyMerge < .seconds(25))
            #expect(try await AggregateQueryStore(database: harness.database).mergePopulationIndex() == 0)
        }
    }

    /// Migration 0054: a population large enough to be compressed (past PostgreSQL's 2 KB) is
    /// stored with lz4, not pglz (13–15 ms for 10,000 ids in the answer's transaction), and reads
    /// back whole and sorted.
    @Test func aPopulationIsStoredWithLZ4() async throws {
        try await withHarness { harness in
            let ids = try await harness.people(400, area: "IT-MI", value: 70)
            let (answer, queryId) = try await harness.service.run(try Self.spec(), party: try await harness.party())
            #expect(answer.answer.status == .answered)
            let row = try await harness.database.query(
                "SELECT pg_column_compression(members), members FROM aggregate_populations WHERE query_id = \(queryId)")[0]
            let (method, members) = try row.decode((String?, [Int64]).self)
            #expect(method == "lz4")
            #expect(members == ids.sorted())
        }
    }

    @Test func aDifferencingAttackLearnsNoMoreThanEpsilonAllows() async throws {
        try await withHarness { harness in
            try await harness.people(80, area: "IT-MI", value: 70)  // well above 20 + the margin of 27
            let target = try await harness.people(1, area: "IT-BG", value: 70)
            let withTarget = try Self.spec(areas: ["IT-MI", "IT-BG"])
            let withoutTarget = try Self.spec(areas: ["IT-MI"])
            var correct = 0
            var answered = 0
            let trials = 120
            for trial in 0..<trials {
                let high = trial % 2 == 0  // the secret: the target's heart rate is 200 or 40
                try await harness.setHeartRate(target, high ? 200 : 40)
                let attacker = try await harness.party()  // a fresh budget every time
                let a = try await harness.service.run(withTarget, for: attacker).answer.groups.first
                let b = try await harness.service.run(withoutTarget, for: attacker).answer.groups.first
                guard let a, let b, let meanA = a.value, let meanB = b.value else { continue }
                answered += 1
                let difference = meanA * Double(a.count) - meanB * Double(b.count)  // the target's value, if there were no noise
                if (difference > 120) == high { correct += 1 }
            }
            // ε = 1 for the query that includes the target: no test beats e^ε / (1 + e^ε) ≈ 0.731;
            // allowance of 3.5 standard deviations for 120 trials. Without noise it would be 1.0.
            #expect(answered >= 110, "the groups must be released for the attack to be tried")
            let accuracy = Double(correct) / Double(max(answered, 1))
            let bound: Double = exp(1) / (1 + exp(1))
            let slack: Double = 3.5 * (bound * (1 - bound) / Double(max(answered, 1))).squareRoot()
            #expect(accuracy <= bound + slack, "accuracy \(accuracy)")
        }
    }

    @Test func theSameQuestionIsAnsweredOnceAndChargedOnce() async throws {
        try await withHarness { harness in
            try await harness.people(150, area: "IT-MI", value: 65)
            let party = try await harness.party()
            let spec = try Self.spec(epsilon: 50)
            let first = try await harness.service.run(spec, for: party)
            #expect(first.answer.status == .answered && !first.repeated)
            for _ in 0..<99 {
                let again = try await harness.service.run(spec, for: party)
                #expect(again.repeated && again.id == first.id && again.answer == first.answer)
            }
            let status = try await harness.service.status(for: party)
            #expect(status.spentToday == Epsilon(hundredths: 50))
            let audit = try await AuditChain.verify(database: harness.database)
            #expect(audit.rows == 100 && audit.firstBrokenRow == nil)
        }
    }

    @Test func fiftyConcurrentQueriesNeverOverspend() async throws {
        var budget = PrivacyBudget()
        budget.perDay = Epsilon(hundredths: 200)
        try await withHarness(budget: budget) { harness in
            try await harness.people(25, area: "IT-MI", value: 80)
            let party = try await harness.party()
            let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
                for day in 1...50 {  // fifty different questions of ε = 0.1 each
                    let distinct =
                        day > 31
                        ? try Self.spec(.count, epsilon: 10, to: String(format: "2026-10-%02d", day - 31))
                        : try Self.spec(epsilon: 10, to: String(format: "2026-10-%02d", day))
                    group.addTask {
                        do {
                            _ = try await harness.service.run(distinct, for: party)
                            return true
                        } catch AggregateError.budgetExhausted {
                            return false
                        }
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 20)  // 20 × 0.1 = the day's 2.0, not one more
            let status = try await harness.service.status(for: party)
            #expect(status.spentToday == Epsilon(hundredths: 200))
        }
    }

    @Test func refusalsSpendAndTheAuditChainCatchesAnEdit() async throws {
        try await withHarness { harness in
            try await harness.people(10, area: "IT-CO", value: 70)  // below the minimum of 20
            let party = try await harness.party()
            let refused = try await harness.service.run(try Self.spec(areas: ["IT-CO"], epsilon: 30), for: party)
            #expect(refused.answer.status == .refused && refused.answer.reason == "group too small" && refused.answer.groups.isEmpty)
            #expect(try await harness.service.status(for: party).spentToday == Epsilon(hundredths: 30))
            _ = try await harness.service.run(try Self.spec(areas: ["IT-CO"], epsilon: 40), for: party)
            _ = try await harness.service.run(try Self.spec(areas: ["IT-CO"], epsilon: 50), for: party)
            #expect(try await AuditChain.verify(database: harness.database).firstBrokenRow == nil)

            // The table refuses edits…
            await #expect(throws: (any Error).self) {
                try await harness.database.query("UPDATE aggregate_audit SET decision = 'answered' WHERE id = 2")
            }
            // …and an edit made around that (by the table's owner) breaks the chain at that row.
            try await harness.database.query("ALTER TABLE aggregate_audit DISABLE TRIGGER aggregate_audit_append_only")
            try await harness.database.query("UPDATE aggregate_audit SET epsilon_hundredths = 1 WHERE id = 2")
            let verification = try await AuditChain.verify(database: harness.database)
            #expect(verification.firstBrokenRow == 2 && verification.rows == 1)
        }
    }

    @Test func monthlyTotalsStayExactUnderLateDataAndReadPlansCoverTheWindow() async throws {
        try await withHarness { harness in
            let ids = try await harness.people(3, area: "IT-MI", value: 60)
            try await harness.setHeartRate(ids, 90)  // every day rewritten
            let rows = try await harness.database.query(
                """
                SELECT m.days, m.sample_count, m.value_sum, (SELECT sum(value_sum) FROM daily_rollups d
                       WHERE d.individual_id = m.individual_id AND date_trunc('month', d.day) = m.month)
                FROM monthly_rollups m WHERE m.individual_id = \(ids[0])
                """)
            let (days, count, sum, daily) = try rows[0].decode((Int32, Int64, Double, Double).self)
            #expect(rows.count == 1 && days == 31 && count == 3100 && abs(sum - daily) < 1e-6 && abs(sum - 279_000) < 1e-6)
            let weeks = try await harness.database.query(
                """
                SELECT sum(days)::int8, sum(value_sum) FROM weekly_rollups WHERE individual_id = \(ids[0]) AND days > 0
                """)
            let (weekDays, weekSum) = try weeks[0].decode((Int64, Double).self)
            #expect(weekDays == 31 && abs(weekSum - 279_000) < 1e-6)
        }
        // Whatever the window, months added and days added or taken away cover exactly its days.
        for (from, to) in [
            ("2026-10-01", "2026-10-31"), ("2026-10-05", "2026-12-20"), ("2026-02-27", "2026-03-02"), ("2025-11-22", "2026-11-21"),
            ("2026-10-02", "2026-10-30"),
        ] {
            let spec = try AggregateSpec(
                type: .sample(.heartRate), statistic: .mean, areas: [], ageBands: [], sex: nil,
                from: CalendarDay(parsing: from), to: CalendarDay(parsing: to), groupBy: nil, epsilon: Epsilon(hundredths: 10)
            )
            let plan = spec.readPlan()
            var covered: [Int: Int] = [:]
            for month in plan.months {
                for day in month.ordinal..<month.firstOfNextMonth.ordinal { covered[day, default: 0] += 1 }
            }
            for day in plan.added { covered[day.ordinal, default: 0] += 1 }
            for day in plan.subtracted { covered[day.ordinal, default: 0] -= 1 }
            let (weeks, edges) = spec.wholeWeeks()
            var weekDays = Set<Int>()
            for week in weeks { for day in week.ordinal..<(week.ordinal + 7) { #expect(weekDays.insert(day).inserted) } }
            for edge in edges { for day in edge.from.ordinal...edge.to.ordinal { #expect(weekDays.insert(day).inserted) } }
            #expect(weekDays == Set(spec.from.ordinal...spec.to.ordinal), "weeks of \(from)…\(to)")
            #expect(weeks.allSatisfy { AggregateSpec.weekStart($0) == $0 })
            #expect(edges.count <= 2 && edges.allSatisfy { AggregateSpec.weekStart($0.from) == AggregateSpec.weekStart($0.to) }, "\(from)…\(to)")
            let days = covered.filter { $0.value != 0 }
            let exact = days.values.allSatisfy { $0 == 1 }
            #expect(days.count == spec.days, "\(from)…\(to)")
            #expect(exact && days.keys.min() == spec.from.ordinal, "\(from)…\(to)")
        }
    }
}
