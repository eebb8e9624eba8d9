import AccessManager
import Configuration
import DatabaseLink
import Foundation
import HealthSharing
import Logging

/// Every setting of the server, read once at start-up. The README's configuration table lists
/// the environment variables; nothing else in the code reads the environment.
package struct AppConfiguration: Sendable {
    /// `HOST`: address to listen on.
    package var host = "127.0.0.1"
    /// `PORT`: TCP port (0 picks a free one).
    package var port = 8080
    /// `DATABASE_URL`: PostgreSQL to use; when absent, an embedded cluster under `DATA_DIR` is started.
    package var databaseURL: DatabaseURL?
    /// `READ_DATABASE_URL`: a streaming replica of `DATABASE_URL` for aggregate queries and
    /// exports; while it is unreachable they read from the primary.
    package var readDatabaseURL: DatabaseURL?
    /// How quickly the replica must answer before its reads go to the primary (not an
    /// environment setting: the defaults suit production; tests on a loaded machine widen them).
    package var replicaTiming = ReadReplica.Timing()
    /// `DATABASE_POOL_SIZE`: maximum connections in the pool (and in the replica's pool).
    package var databasePoolSize = 20
    /// `DATA_DIR`: where the embedded PostgreSQL keeps its cluster.
    package var dataDirectory = ".data"
    /// `LOG_LEVEL`: trace, debug, info, notice, warning, error, critical.
    package var logLevel = Logger.Level.info
    /// `TOKEN_TTL_SECONDS`: lifetime of a login token.
    package var tokenLifetime = Duration.seconds(24 * 3600)
    /// `REQUEST_TTL_SECONDS`: how long an access request may stay unanswered.
    package var requestLifetime = Duration.seconds(30 * 24 * 3600)
    /// `MAX_BODY_BYTES`: largest request body accepted (larger: 413).
    package var maxBodyBytes = 4 * 1024 * 1024
    /// `IMPORT_MAX_BYTES`: largest file an import takes (streamed to the database, not held).
    package var importMaxBytes: Int64 = 2 << 30
    /// `IMPORT_WORKERS`: imports this instance reads at once (0: it reads none).
    package var importWorkers = 1
    /// How imports are read; `IMPORT_LEASE_SECONDS`: how long a worker's claim lasts without a
    /// commit before another instance takes the import over (it died).
    package var importSettings = ImportSettings()
    /// `REQUEST_TIMEOUT_SECONDS`: how long a handler may take to produce its response (then 503).
    package var requestTimeout = Duration.seconds(30)
    /// `HTTP_IDLE_TIMEOUT_SECONDS`: a kept-alive connection with no request for this long is closed.
    package var idleTimeout = Duration.seconds(75)
    /// `TRUST_PROXY_HEADERS`: behind a load balancer, take the client's address from the last
    /// `X-Forwarded-For` entry (never set it when clients reach the server directly).
    package var trustProxyHeaders = false
    /// `RATE_LIMIT_REQUESTS` per `RATE_LIMIT_WINDOW_SECONDS`: requests one login token or API key
    /// may make to one instance (bursts up to the limit).
    package var rateLimitRequests = 1200
    package var rateLimitWindow = Duration.seconds(60)
    /// `SHARE_PAGE_REQUESTS_PER_MINUTE`: share-link pages (`/s/{token}`) one address may open a
    /// minute on one instance (no account to limit: the address is the key).
    package var sharePageRequestsPerMinute = 30
    /// `LOGIN_FAILURES_PER_ACCOUNT`, `LOGIN_FAILURES_PER_ADDRESS` per `LOGIN_FAILURE_WINDOW_SECONDS`:
    /// failed sign-ins before sign-in is refused (429) for the rest of the window.
    package var loginThrottle = LoginThrottle.Limits()
    /// `MIGRATIONS_DIR`: the plain-SQL migrations; unset, the ones compiled into the executable.
    package var migrationsDirectory: String?
    /// `OPENAPI_PATH`: the API contract served at `/openapi.yaml`; unset, the compiled-in one.
    package var openAPIPath: String?
    /// `PAGES_DIR`: the Mustache templates and scripts of the HTML pages; unset, the compiled-in ones.
    package var pagesDirectory: String?
    /// The files compiled into the executable (set by `data4help`; nil in a server built into a
    /// test or a bench, which reads the repository's files instead).
    package var builtInFiles: BuiltInFiles?
    /// `MAP_TILE_URL`: the map tiles of the Track4Run pages (`{z}`, `{x}`, `{y}`, optionally `{s}`),
    /// fetched by the spectator's browser; empty: the course as plain SVG, no map and nothing
    /// fetched from elsewhere. `MAP_ATTRIBUTION`: the tiles' credit line (HTML).
    package var mapTileURL = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
    package var mapAttribution = #"&copy; <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors"#
    /// `LEAFLET_DIR`: Leaflet as Debian's `libjs-leaflet` installs it, served from `/assets/leaflet/`
    /// (no CDN); missing, the pages draw the plain SVG course.
    package var leafletDirectory = "/usr/share/javascript/leaflet"

    /// `READINESS_TIMEOUT_MS`: how long the database has to answer `/readyz` before the server
    /// says it is not ready (keep it below the readiness probe's own timeout).
    package var readinessTimeout = Duration.seconds(2)
    /// `REQUEST_EXPIRY_SWEEP_SECONDS`: how often lapsed requests and ended grants are recorded as
    /// expired (and their parties told).
    package var requestExpirySweep = Duration.seconds(60)
    /// `WEBHOOK_TIMEOUT_SECONDS`: how long a webhook receiver has to answer.
    package var webhookTimeout = Duration.seconds(10)
    /// `WEBHOOK_BACKOFF_SCALE`: multiplies the retry schedule (1 min … 12 h); below 1 only for tests.
    package var webhookBackoffScale = 1.0
    /// `WEBHOOK_WORKERS`: concurrent webhook attempts per instance; 0 makes an instance that
    /// serves the API but delivers nothing (other instances deliver).
    package var webhookWorkers = 8
    /// `WEBHOOK_ALLOW_PRIVATE_NETWORKS`: development only — lets webhooks reach loopback and
    /// private addresses (a local receiver); never set it in production (SSRF).
    package var webhookAllowPrivateNetworks = false

    /// `AGGREGATE_MIN_GROUP`: a group is released only if more individuals than this match it.
    package var aggregateMinimumGroup = 1000
    /// `AGGREGATE_EPSILON_PER_QUERY`, `…_PER_DAY`, `…_PER_30_DAYS`: each party's privacy budget.
    package var privacyBudget = PrivacyBudget()
    /// `AGGREGATE_SUBSCRIPTION_SWEEP_SECONDS`: how often due aggregate subscriptions are looked for.
    package var aggregateSubscriptionSweep = Duration.seconds(60)
    /// `CREDENTIAL_CACHE_SECONDS`: how long a resolved login token or API key is kept in memory
    /// (revocations are announced and forgotten at once); 0: every request looks it up.
    package var credentialCacheLifetime: Duration? = .seconds(60)
    /// `COMPACTION_INTERVAL_SECONDS`: how often settled hours' minute blocks are merged into hour
    /// blocks (`SampleCompactor`, one instance at a time).
    package var compactionInterval = Duration.seconds(3_600)
    /// `INSIGHT_SWEEP_SECONDS`: how often recent nights' resting heart rate and new workouts'
    /// analyses are computed for everyone (what aggregates over them read).
    package var insightSweep = Duration.seconds(300)

    /// `SOS_DISPATCH_URL`: where AutomatedSOS POSTs emergency calls (the dispatch centre; for a
    /// demo, `data4help ems-sim`). Unset: incidents are detected and listed, but this instance
    /// dispatches nothing (another instance with it set does).
    package var sosDispatchURL: String?
    /// `SOS_DISPATCH_SECRET`: shared with the dispatch centre; signs our calls and its reports.
    package var sosDispatchSecret: String?
    /// `METRICS_TOKEN`: the bearer token `/metrics` asks for; unset, it answers loopback only.
    package var metricsToken: String?
    /// `SOS_DISPATCH_TIMEOUT_SECONDS`: how long the dispatch centre has to accept a call before
    /// it is attempted again.
    package var sosDispatchTimeout = Duration.seconds(2)

    /// `LIVE_UPDATE_INTERVAL_MS`: the shortest time between two batches of live updates of one
    /// event (the most an update waits to be batched with others; 0 sends each at once).
    package var liveUpdateInterval = Duration.milliseconds(50)

    /// `PUBLIC_BASE_URL`: the address people reach this server at (links in e-mails); by default
    /// `http://HOST:PORT`.
    package var publicBaseURL: String?
    /// `MAIL_SMTP_URL`: `smtp://host:port` of the relay that sends e-mail (registration links and
    /// notices). Unset: messages are written as `.eml` files into `MAIL_PICKUP_DIR` instead.
    package var mailRelay: MailRelay?
    /// `MAIL_PICKUP_DIR`: where messages go when there is no relay (default `DATA_DIR/mail`).
    package var mailPickupDirectory: String?
    /// `MAIL_FROM`: the sender address of every message (required with `MAIL_SMTP_URL`).
    package var mailSender = "no-reply@data4help.invalid"
    /// How long a registration's confirmation link works (not an environment setting).
    package var registrationLifetime = Duration.seconds(24 * 3600)

    /// An SMTP relay's address.
    package struct MailRelay: Sendable, Equatable {
        package var host: String
        package var port: Int
    }

    package init() {}

    /// Where people reach this server: `PUBLIC_BASE_URL`, else `http://HOST:PORT` (`localhost`
    /// for a server listening on every address).
    package var baseURL: String {
        publicBaseURL ?? "http://\(host == "0.0.0.0" || host == "::" ? "localhost" : host):\(port)"
    }

    /// The registration settings these values make.
    package var registrationSettings: RegistrationService.Settings {
        var settings = RegistrationService.Settings()
        settings.publicBaseURL = baseURL
        settings.lifetime = registrationLifetime
        return settings
    }

    /// The webhook delivery settings these values make.
    package var webhookSettings: WebhookDeliverySettings {
        var settings = WebhookDeliverySettings()
        settings.timeout = webhookTimeout
        settings.workers = webhookWorkers
        settings.allowPrivateNetworks = webhookAllowPrivateNetworks
        settings.backoff = settings.backoff.map { $0 * webhookBackoffScale }
        return settings
    }

    /// Reads the settings; an unparsable value is an error naming its variable, never silently ignored.
    package init(reader: ConfigReader) throws(ConfigurationError) {
        self.init()
        if let value = reader.string(forKey: "host") { host = value }
        port = try Self.integer(reader, "port", env: "PORT", default: port, range: 0...65535)
        if let value = reader.string(forKey: "database.url", isSecret: true), !value.isEmpty {
            do {
                databaseURL = try DatabaseURL(parsing: value)
            } catch {
                throw ConfigurationError(error.description)
            }
        }
        if let value = reader.string(forKey: "read.database.url", isSecret: true), !value.isEmpty {
            do {
                readDatabaseURL = try DatabaseURL(parsing: value)
            } catch {
                throw ConfigurationError(error.description.replacingOccurrences(of: "DATABASE_URL", with: "READ_DATABASE_URL"))
            }
        }
        databasePoolSize = try Self.integer(reader, "database.pool.size", env: "DATABASE_POOL_SIZE", default: databasePoolSize, range: 1...500)
        if let value = reader.string(forKey: "data.dir") { dataDirectory = value }
        if let value = reader.string(forKey: "log.level") {
            guard let level = Logger.Level(rawValue: value.lowercased()) else {
                throw ConfigurationError("LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical")
            }
            logLevel = level
        }
        let ttl = try Self.integer(reader, "token.ttl.seconds", env: "TOKEN_TTL_SECONDS", default: 24 * 3600, range: 1...(365 * 24 * 3600))
        tokenLifetime = .seconds(ttl)
        let requestTTL = try Self.integer(
            reader, "request.ttl.seconds", env: "REQUEST_TTL_SECONDS", default: 30 * 24 * 3600, range: 60...(366 * 24 * 3600))
        requestLifetime = .seconds(requestTTL)
        maxBodyBytes = try Self.integer(reader, "max.body.bytes", env: "MAX_BODY_BYTES", default: maxBodyBytes, range: 1024...(256 * 1024 * 1024))
        importMaxBytes = Int64(
            try Self.integer(reader, "import.max.bytes", env: "IMPORT_MAX_BYTES", default: Int(importMaxBytes), range: 1024...(64 << 30)))
        importWorkers = try Self.integer(reader, "import.workers", env: "IMPORT_WORKERS", default: importWorkers, range: 0...16)
        importSettings.lease = .seconds(
            try Self.integer(
                reader, "import.lease.seconds", env: "IMPORT_LEASE_SECONDS", default: Int(importSettings.lease.components.seconds), range: 5...3600
            ))
        requestTimeout = .seconds(try Self.integer(reader, "request.timeout.seconds", env: "REQUEST_TIMEOUT_SECONDS", default: 30, range: 1...3600))
        idleTimeout = .seconds(try Self.integer(reader, "http.idle.timeout.seconds", env: "HTTP_IDLE_TIMEOUT_SECONDS", default: 75, range: 1...3600))
        if let text = reader.string(forKey: "trust.proxy.headers") {
            guard let trust = Bool(text.lowercased()) else { throw ConfigurationError("TRUST_PROXY_HEADERS must be true or false") }
            trustProxyHeaders = trust
        }
        rateLimitRequests = try Self.integer(
            reader, "rate.limit.requests", env: "RATE_LIMIT_REQUESTS", default: rateLimitRequests, range: 1...1_000_000)
        rateLimitWindow = .seconds(
            try Self.integer(reader, "rate.limit.window.seconds", env: "RATE_LIMIT_WINDOW_SECONDS", default: 60, range: 1...86_400))
        sharePageRequestsPerMinute = try Self.integer(
            reader, "share.page.requests.per.minute", env: "SHARE_PAGE_REQUESTS_PER_MINUTE", default: sharePageRequestsPerMinute,
            range: 1...1_000_000)
        loginThrottle.perAccount = Int32(
            try Self.integer(
                reader, "login.failures.per.account", env: "LOGIN_FAILURES_PER_ACCOUNT", default: Int(loginThrottle.perAccount), range: 1...10_000
            ))
        loginThrottle.perAddress = Int32(
            try Self.integer(
                reader, "login.failures.per.address", env: "LOGIN_FAILURES_PER_ADDRESS", default: Int(loginThrottle.perAddress), range: 1...1_000_000
            ))
        loginThrottle.window = .seconds(
            try Self.integer(
                reader, "login.failure.window.seconds", env: "LOGIN_FAILURE_WINDOW_SECONDS", default: 900, range: 1...86_400
            ))
        readinessTimeout = .milliseconds(
            try Self.integer(reader, "readiness.timeout.ms", env: "READINESS_TIMEOUT_MS", default: 2_000, range: 100...60_000))
        requestExpirySweep = .seconds(
            try Self.integer(
                reader, "request.expiry.sweep.seconds", env: "REQUEST_EXPIRY_SWEEP_SECONDS", default: 60, range: 1...86_400
            ))
        webhookTimeout = .seconds(try Self.integer(reader, "webhook.timeout.seconds", env: "WEBHOOK_TIMEOUT_SECONDS", default: 10, range: 1...60))
        webhookWorkers = try Self.integer(reader, "webhook.workers", env: "WEBHOOK_WORKERS", default: webhookWorkers, range: 0...256)
        if let text = reader.string(forKey: "webhook.backoff.scale") {
            guard let scale = Double(text), scale > 0, scale <= 10 else {
                throw ConfigurationError("WEBHOOK_BACKOFF_SCALE must be a number above 0 and at most 10")
            }
            webhookBackoffScale = scale
        }
        if let text = reader.string(forKey: "webhook.allow.private.networks") {
            guard let allow = Bool(text.lowercased()) else {
                throw ConfigurationError("WEBHOOK_ALLOW_PRIVATE_NETWORKS must be true or false")
            }
            webhookAllowPrivateNetworks = allow
        }
        aggregateMinimumGroup = try Self.integer(reader, "aggregate.min.group", env: "AGGREGATE_MIN_GROUP", default: 1000, range: 1...10_000_000)
        privacyBudget.perQuery = try Self.epsilon(
            reader, "aggregate.epsilon.per.query", env: "AGGREGATE_EPSILON_PER_QUERY", default: privacyBudget.perQuery)
        privacyBudget.perDay = try Self.epsilon(reader, "aggregate.epsilon.per.day", env: "AGGREGATE_EPSILON_PER_DAY", default: privacyBudget.perDay)
        privacyBudget.per30Days = try Self.epsilon(
            reader, "aggregate.epsilon.per.30.days", env: "AGGREGATE_EPSILON_PER_30_DAYS", default: privacyBudget.per30Days)
        aggregateSubscriptionSweep = .seconds(
            try Self.integer(
                reader, "aggregate.subscription.sweep.seconds", env: "AGGREGATE_SUBSCRIPTION_SWEEP_SECONDS", default: 60, range: 1...86_400
            ))
        let credentialSeconds = try Self.integer(
            reader, "credential.cache.seconds", env: "CREDENTIAL_CACHE_SECONDS", default: 60, range: 0...3_600)
        credentialCacheLifetime = credentialSeconds == 0 ? nil : .seconds(credentialSeconds)
        insightSweep = .seconds(
            try Self.integer(reader, "insight.sweep.seconds", env: "INSIGHT_SWEEP_SECONDS", default: 300, range: 1...86_400))
        compactionInterval = .seconds(
            try Self.integer(reader, "compaction.interval.seconds", env: "COMPACTION_INTERVAL_SECONDS", default: 3_600, range: 1...86_400))
        privacyBudget.defaultEpsilon = min(privacyBudget.defaultEpsilon, privacyBudget.perQuery)
        if let value = reader.string(forKey: "sos.dispatch.url"), !value.isEmpty {
            guard let url = URL(string: value), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw ConfigurationError("SOS_DISPATCH_URL must be an http(s) URL")
            }
            sosDispatchURL = value
        }
        if let value = reader.string(forKey: "sos.dispatch.secret", isSecret: true), !value.isEmpty {
            guard value.utf8.count >= 16 else { throw ConfigurationError("SOS_DISPATCH_SECRET must be at least 16 characters") }
            sosDispatchSecret = value
        }
        if let value = reader.string(forKey: "metrics.token", isSecret: true), !value.isEmpty {
            guard value.utf8.count >= 16 else { throw ConfigurationError("METRICS_TOKEN must be at least 16 characters") }
            metricsToken = value
        }
        liveUpdateInterval = .milliseconds(
            try Self.integer(
                reader, "live.update.interval.ms", env: "LIVE_UPDATE_INTERVAL_MS", default: 50, range: 0...5_000
            ))
        if sosDispatchURL != nil, sosDispatchSecret == nil {
            throw ConfigurationError("SOS_DISPATCH_SECRET is required when SOS_DISPATCH_URL is set")
        }
        sosDispatchTimeout = .seconds(
            try Self.integer(
                reader, "sos.dispatch.timeout.seconds", env: "SOS_DISPATCH_TIMEOUT_SECONDS", default: 2, range: 1...4
            ))
        if let value = reader.string(forKey: "public.base.url"), !value.isEmpty {
            guard let url = URL(string: value), ["http", "https"].contains(url.scheme ?? ""), url.host != nil, url.query == nil else {
                throw ConfigurationError("PUBLIC_BASE_URL must be an http(s) URL without a query, like https://data4help.example")
            }
            publicBaseURL = value.hasSuffix("/") ? String(value.dropLast()) : value
        }
        if let value = reader.string(forKey: "mail.smtp.url"), !value.isEmpty {
            guard let url = URL(string: value), url.scheme == "smtp", let host = url.host, !host.isEmpty, url.user == nil else {
                throw ConfigurationError("MAIL_SMTP_URL must be smtp://host:port (a relay on the private network; no credentials)")
            }
            mailRelay = MailRelay(host: host, port: url.port ?? 25)
            guard let sender = reader.string(forKey: "mail.from"), !sender.isEmpty else {
                throw ConfigurationError("MAIL_FROM is required when MAIL_SMTP_URL is set")
            }
            mailSender = sender
        }
        if let value = reader.string(forKey: "mail.from"), !value.isEmpty {
            guard let address = try? EmailAddress(parsing: value) else { throw ConfigurationError("MAIL_FROM must be an e-mail address") }
            mailSender = address.value
        }
        if let value = reader.string(forKey: "mail.pickup.dir"), !value.isEmpty { mailPickupDirectory = value }
        if let value = reader.string(forKey: "migrations.dir"), !value.isEmpty { migrationsDirectory = value }
        if let value = reader.string(forKey: "openapi.path"), !value.isEmpty { openAPIPath = value }
        if let value = reader.string(forKey: "pages.dir"), !value.isEmpty { pagesDirectory = value }
        if let value = reader.string(forKey: "map.tile.url") {
            guard value.isEmpty || MapTiles(template: value, attribution: "") != nil else {
                throw ConfigurationError("MAP_TILE_URL must be empty or an http(s) URL with {z}, {x} and {y}")
            }
            mapTileURL = value
        }
        if let value = reader.string(forKey: "map.attribution") { mapAttribution = value }
        if let value = reader.string(forKey: "leaflet.dir"), !value.isEmpty { leafletDirectory = value }
    }

    private static func epsilon(_ reader: ConfigReader, _ key: ConfigKey, env: String, default value: Epsilon) throws(ConfigurationError) -> Epsilon {
        guard let text = reader.string(forKey: key) else { return value }
        guard let number = Double(text), let epsilon = try? Epsilon(parsing: number, maximum: Epsilon(hundredths: 10_000)) else {
            throw ConfigurationError("\(env) must be a multiple of 0.01 from 0.01 to 100")
        }
        return epsilon
    }

    private static func integer(
        _ reader: ConfigReader, _ key: ConfigKey, env: String, default value: Int, range: ClosedRange<Int>
    ) throws(ConfigurationError) -> Int {
        guard let text = reader.string(forKey: key) else { return value }
        guard let parsed = Int(text), range.contains(parsed) else {
            throw ConfigurationError("\(env) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return parsed
    }
}

/// A setting that cannot be used; the message names the variable, never a secret value.
package struct ConfigurationError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
