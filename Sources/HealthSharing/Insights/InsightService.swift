import Data4HelpCore
import DatabaseLink
import Foundation

/// Why an insight cannot be given.
package enum InsightError: Error, Equatable {
    case workoutNotFound
    /// The account is gone (erased while the request ran).
    case accountNotFound
    /// The window is empty or longer than `maximumDays`.
    case window(maximumDays: Int)
}

/// A workout with its analysis and how it compares with the person's earlier workouts of the
/// same activity.
package struct WorkoutInsight: Sendable {
    package let workout: Workout
    package let analysis: WorkoutAnalysis
    /// The earlier ones (latest first, at most `InsightService.comparedWorkouts`), each with its figures.
    package let earlier: [(workout: Workout, analysis: WorkoutAnalysis)]
}

/// One day's resting heart rate (nil when its night had no complete 5-minute window).
package struct DailyRestingHeartRate: Sendable, Equatable {
    package let day: String
    package let bpm: Double?
    package let windowStartMs: Int64?
}

/// A trend of the resting heart rate over the last `days` days of the window: the mean and the
/// least-squares slope, in bpm per week.
package struct RestingTrend: Sendable, Equatable {
    package let days: Int
    package let daysWithValue: Int
    package let mean: Double?
    package let slopePerWeek: Double?
}

/// Training load of one week (Monday, in the person's time zone): seconds in each heart-rate
/// zone over its workouts.
package struct WeeklyLoad: Sendable, Equatable {
    package let week: String
    package let workouts: Int
    package let zoneSeconds: [Double]
}

package struct Insights: Sendable {
    package let timeZone: String
    package let maximum: MaximumHeartRate
    package let restingHeartRate: [DailyRestingHeartRate]
    package let trends: [RestingTrend]
    package let weeklyLoad: [WeeklyLoad]
}

/// HealthSharing's Data Elaboration for one person (goals G3 and G5 of the design): each
/// workout's analysis — computed once and kept, recomputed when its inputs change — and, over a
/// window, the resting heart rate per day, its trends, and the weekly training load.
package struct InsightService: Sendable {
    package static let comparedWorkouts = 10
    package static let maximumWindowDays = 400

    let workouts: WorkoutStore
    let analyses: WorkoutAnalysisStore
    let individuals: IndividualStore
    let ownData: OwnDataReader
    let reader: HealthDataReader
    let rests: RestingHeartRateStore

    package init(database: Database) {
        rests = RestingHeartRateStore(database: database, heartRateCode: SampleType.heartRate.storageCode)
        reader = HealthDataReader(database: database)
        workouts = WorkoutStore(database: database)
        analyses = WorkoutAnalysisStore(database: database)
        individuals = IndividualStore(database: database)
        ownData = OwnDataReader(database: database)
    }

    /// The person's maximum heart rate on a date, and their time zone's calendar.
    func person(_ individual: IndividualID) async throws -> (record: IndividualRecord, calendar: Calendar) {
        guard let record = try await individuals.find(id: individual.rowId) else { throw InsightError.accountNotFound }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: record.timeZone) ?? .gmt
        return (record, calendar)
    }

    func maximum(_ record: IndividualRecord, on date: Date, calendar: Calendar) -> MaximumHeartRate {
        let parts = record.birthDate.split(separator: "-").compactMap { Int($0) }
        let birth = parts.count == 3 ? DateComponents(year: parts[0], month: parts[1], day: parts[2]) : nil
        return MaximumHeartRate.of(measured: record.maximumHeartRate, birthDate: birth, on: date, calendar: calendar)
    }

    /// A workout's analysis and its comparison with the earlier ones of the same activity.
    package func workout(_ id: UUID, of individual: IndividualID) async throws -> WorkoutInsight {
        guard let workout = try await workouts.find(id, individualId: individual.rowId) else { throw InsightError.workoutNotFound }
        let (record, calendar) = try await person(individual)
        let analysis = try await analysed([workout], of: individual, record: record, calendar: calendar)[0]
        var earlier: [Workout] = []
        var before: Int64? = workout.sequence
        while earlier.count < Self.comparedWorkouts {
            let page = try await workouts.list(individualId: individual.rowId, to: workout.start, limit: 50, beforeId: before)
            earlier += page.filter { $0.activity == workout.activity && $0.sequence != workout.sequence && $0.start < workout.start }
            guard page.count == 50, let last = page.last else { break }
            before = last.sequence
        }
        earlier = Array(earlier.prefix(Self.comparedWorkouts))
        let earlierAnalyses = try await analysed(earlier, of: individual, record: record, calendar: calendar)
        return WorkoutInsight(workout: workout, analysis: analysis, earlier: Array(zip(earlier, earlierAnalyses)))
    }

    /// The analyses of these workouts of the person, in order (kept, or computed and kept).
    package func analyses(of individual: IndividualID, _ list: [Workout]) async throws -> [WorkoutAnalysis] {
        guard !list.isEmpty else { return [] }
        let (record, calendar) = try await person(individual)
        return try await analysed(list, of: individual, record: record, calendar: calendar)
    }

    /// The analyses of `list`: kept ones whose inputs are unchanged as they are, the others
    /// computed from the readings and kept.
    func analysed(_ list: [Workout], of individual: IndividualID, record: IndividualRecord, calendar: Calendar) async throws -> [WorkoutAnalysis] {
        let stored = try await analyses.stored(workoutIds: list.map(\.sequence))
        let versions = try await analyses.fingerprints(
            individualId: individual.rowId, type: SampleType.heartRate.storageCode,
            windows: list.map { ($0.start.epochMilliseconds, $0.end.epochMilliseconds) })
        var results: [WorkoutAnalysis] = []
        for (workout, readings) in zip(list, versions) {
            let maximum = maximum(record, on: workout.start, calendar: calendar)
            let (startMs, endMs) = (workout.start.epochMilliseconds, workout.end.epochMilliseconds)
            let fingerprint = "v\(WorkoutAnalysis.version)|max \(maximum.bpm)|hr \(readings)"
            if let kept = stored[workout.sequence], kept.fingerprint == fingerprint,
                let analysis = try? JSONDecoder().decode(WorkoutAnalysis.self, from: Data(kept.json.utf8))
            {
                results.append(analysis)
                continue
            }
            let end = workout.end.addingTimeInterval(0.001)
            let heart = try await reader.readings(
                individualId: individual.rowId, type: SampleType.heartRate.storageCode, windows: [(startMs, endMs + 1)])
            let fixes = try await ownData.locations(
                of: individual, from: workout.start, to: end, order: .ascending, limit: WorkoutService.maximumPoints, after: nil)
            let analysis = WorkoutAnalysis.of(
                workout, heartRate: heart.map { HeartRatePoint(timeMs: $0.timeMs, bpm: Double($0.value.description) ?? Double($0.value)) },
                route: fixes.items.map { (timeMs: $0.time.epochMilliseconds, latitude: $0.latitude, longitude: $0.longitude, altitude: $0.altitude) },
                maximum: maximum)
            let json = String(decoding: try JSONEncoder().encode(analysis), as: UTF8.self)
            try await analyses.save(workoutId: workout.sequence, individualId: individual.rowId, fingerprint: fingerprint, json: json)
            results.append(analysis)
        }
        return results
    }

    /// Resting heart rate per local day of `[from, to)`, its 30- and 90-day trends ending at
    /// `to`, and the weekly load of the workouts that started in the window.
    package func insights(of individual: IndividualID, from: Date, to: Date) async throws -> Insights {
        let (record, calendar) = try await person(individual)
        let resting = try await restingHeartRates(of: individual, from: from, to: to, record: record, calendar: calendar)
        let trends = [30, 90].map { Self.trend(Array(resting.suffix($0)), days: $0) }
        // Weekly load: the workouts that started in the window, by the Monday of their week.
        var all: [Workout] = []
        var before: Int64?
        while true {
            let page = try await workouts.list(individualId: individual.rowId, from: from, to: to, limit: 200, beforeId: before)
            all += page
            guard page.count == 200, let last = page.last else { break }
            before = last.sequence
        }
        let analysed = try await analysed(all, of: individual, record: record, calendar: calendar)
        var weeks: [String: (count: Int, seconds: [Double])] = [:]
        var isoCalendar = Calendar(identifier: .iso8601)
        isoCalendar.timeZone = calendar.timeZone
        for (workout, analysis) in zip(all, analysed) {
            let monday = isoCalendar.dateInterval(of: .weekOfYear, for: workout.start)?.start ?? workout.start
            let key = Self.dayText(monday, calendar)
            var week = weeks[key] ?? (0, [0, 0, 0, 0, 0])
            week.count += 1
            for zone in 0..<5 { week.seconds[zone] += analysis.zones.seconds[zone] }
            weeks[key] = week
        }
        return Insights(
            timeZone: record.timeZone, maximum: maximum(record, on: to, calendar: calendar), restingHeartRate: resting, trends: trends,
            weeklyLoad: weeks.keys.sorted().map { WeeklyLoad(week: $0, workouts: weeks[$0]!.count, zoneSeconds: weeks[$0]!.seconds) })
    }

    /// Resting heart rate per local day of `[from, to)` (at most `maximumWindowDays`): each night
    /// as kept when what it was computed from is unchanged, the others computed — their readings
    /// in one read — and kept. A night's inputs: its intervals (from the sleep around it) and the
    /// row versions of the heart-rate rollups of the days they cover (an upload that adds a
    /// reading to a day rewrites that day's rollup).
    package func restingHeartRates(of individual: IndividualID, from: Date, to: Date) async throws -> [DailyRestingHeartRate] {
        let (record, calendar) = try await person(individual)
        return try await restingHeartRates(of: individual, from: from, to: to, record: record, calendar: calendar)
    }

    func restingHeartRates(
        of individual: IndividualID, from: Date, to: Date, record: IndividualRecord, calendar: Calendar
    ) async throws -> [DailyRestingHeartRate] {
        guard from < to, to.timeIntervalSince(from) <= Double(Self.maximumWindowDays) * 86_400 else {
            throw InsightError.window(maximumDays: Self.maximumWindowDays)
        }
        var days: [Date] = []
        var day = calendar.startOfDay(for: from)
        while day < to {
            days.append(day)
            day = calendar.date(byAdding: .day, value: 1, to: day)!
        }
        let texts = days.map { Self.dayText($0, calendar) }
        let sleep = try await sleepIntervals(of: individual, from: days[0].addingTimeInterval(-6 * 3_600), to: to.addingTimeInterval(12 * 3_600))
        let nights = days.map { RestingHeartRate.night(of: $0, calendar: calendar, sleep: sleep) }
        // The local days each night's intervals touch, by their text.
        let touched = nights.map { intervals -> [String] in
            guard let first = intervals.first, let last = intervals.last else { return [] }
            var days: [String] = []
            var day = calendar.startOfDay(for: Date(timeIntervalSince1970: Double(first.startMs) / 1000))
            while day.epochMilliseconds < last.endMs {
                days.append(Self.dayText(day, calendar))
                day = calendar.date(byAdding: .day, value: 1, to: day)!
            }
            return days
        }
        let allTouched = touched.flatMap { $0 }.sorted()
        let versions = try await rests.heartRateDayVersions(
            individualId: individual.rowId, first: allTouched.first ?? texts[0], last: allTouched.last ?? texts[texts.count - 1])
        let kept = try await rests.kept(individualId: individual.rowId, first: texts[0], last: texts[texts.count - 1])
        var fingerprints: [String] = []
        for (intervals, days) in zip(nights, touched) {
            let spans = intervals.map { "\($0.startMs)-\($0.endMs)" }.joined(separator: ",")
            // Ends with the versions as `/v1/v2/`, which the sweep looks for (`staleIndividuals`).
            let readings = "/" + days.map { versions[$0] ?? "-" }.joined(separator: "/") + "/"
            fingerprints.append("v\(RestingHeartRate.version)|\(record.timeZone)|\(spans)|\(readings)")
        }
        let stale = texts.indices.filter { kept[texts[$0]]?.fingerprint != fingerprints[$0] }
        var computed: [String: RestingHeartRateStore.Night] = [:]
        if !stale.isEmpty {
            // Every stale night's intervals, merged, then all their readings in one read.
            var windows: [(startMs: Int64, endMs: Int64)] = []
            for interval in stale.flatMap({ nights[$0] }).sorted(by: { $0.startMs < $1.startMs }) {
                if let last = windows.last, interval.startMs <= last.endMs {
                    windows[windows.count - 1].endMs = max(last.endMs, interval.endMs)
                } else {
                    windows.append(interval)
                }
            }
            let points = try await reader.readings(individualId: individual.rowId, type: SampleType.heartRate.storageCode, windows: windows)
                .map { HeartRatePoint(timeMs: $0.timeMs, bpm: Double($0.value.description) ?? Double($0.value)) }
            for index in stale {
                let found = RestingHeartRate.ofNight(nights[index], points: points)
                computed[texts[index]] = RestingHeartRateStore.Night(
                    day: texts[index], fingerprint: fingerprints[index], bpm: found.map { ($0.bpm * 10).rounded() / 10 },
                    windowStartMs: found?.startMs)
            }
            try await rests.save(individualId: individual.rowId, Array(computed.values))
        }
        return texts.map { text in
            let night = computed[text] ?? kept[text]
            return DailyRestingHeartRate(day: text, bpm: night?.bpm, windowStartMs: night?.windowStartMs)
        }
    }

    /// The person's sleep (every stage but "in bed" and "awake") in `[from, to)`, as intervals.
    func sleepIntervals(of individual: IndividualID, from: Date, to: Date) async throws -> [(startMs: Int64, endMs: Int64)] {
        var intervals: [(startMs: Int64, endMs: Int64)] = []
        var after: SamplePosition?
        repeat {
            let page = try await ownData.samples(of: individual, types: [.sleep], from: from, to: to, order: .ascending, limit: 5_000, after: after)
            for sample in page.items {
                guard let stage = sample.sleepStage, stage != .awake, stage != .inBed, let end = sample.end else { continue }
                intervals.append((sample.start.epochMilliseconds, end.epochMilliseconds))
            }
            after = page.next
        } while after != nil
        return intervals
    }

    static func dayText(_ date: Date, _ calendar: Calendar) -> String {
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }

    /// Mean and least-squares slope (per week) of the days with a value, by day index.
    static func trend(_ days: [DailyRestingHeartRate], days count: Int) -> RestingTrend {
        let values = days.enumerated().compactMap { index, day in day.bpm.map { (x: Double(index), y: $0) } }
        guard !values.isEmpty else { return RestingTrend(days: count, daysWithValue: 0, mean: nil, slopePerWeek: nil) }
        let n = Double(values.count)
        let meanX = values.map(\.x).reduce(0, +) / n, meanY = values.map(\.y).reduce(0, +) / n
        let sxx = values.map { ($0.x - meanX) * ($0.x - meanX) }.reduce(0, +)
        let sxy = values.map { ($0.x - meanX) * ($0.y - meanY) }.reduce(0, +)
        return RestingTrend(
            days: count, daysWithValue: values.count, mean: (meanY * 10).rounded() / 10,
            slopePerWeek: sxx > 0 ? (sxy / sxx * 7 * 100).rounded() / 100 : nil)
    }
}
