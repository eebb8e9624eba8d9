import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import Mustache
import Prometheus
import RunEvents
import SOSManager
import ServiceLifecycle

/// Wires configuration → database → components → controllers → router, and returns the
/// application ready to run. `data4help serve` and the tests build it the same way.
///
/// Migrations run before the server accepts connections (`beforeServerStarts`), with the
/// connection pool already running as a service of the application. Each service reports
/// its run to `roster` (see `ShutdownWatch`).
package func buildApplication(
    configuration: AppConfiguration,
    databaseURL: DatabaseURL,
    metrics: PrometheusCollectorRegistry,
    roster: ServiceRoster = ServiceRoster(),
    logger: Logger
) throws -> some ApplicationProtocol {
    let database = Database(
        configuration: databaseURL.clientConfiguration(maximumConnections: configuration.databasePoolSize),
        logger: logger
    )
    let migrator = Migrator(
        database: database,
        migrations: try ServerFiles.migrations(directory: configuration.migrationsDirectory, builtIn: configuration.builtInFiles)
    )
    let document = try ServerFiles.contract(path: configuration.openAPIPath, builtIn: configuration.builtInFiles)
    let replica = configuration.readDatabaseURL.map {
        ReadReplica(
            primary: database, configuration: $0.clientConfiguration(maximumConnections: configuration.databasePoolSize),
            timing: configuration.replicaTiming, logger: logger
        )
    }
    let components = Components(database: database, replica: replica, configuration: configuration, logger: logger)
    let dispatcher =
        configuration.webhookWorkers > 0
        ? WebhookDispatcher(
            database: database, events: components.partyEvents, encoder: WireWebhookEncoder(), signal: components.changes,
            schemaReady: components.schemaReady, settings: configuration.webhookSettings, logger: logger
        ) : nil
    let held = HeldResourceGauges(
        counts: components.held, components: components, rateLimiter: components.rateLimiter, webhookAttempts: dispatcher?.attemptsInFlight
    )
    let pageFiles = try ServerFiles.pages(directory: configuration.pagesDirectory, builtIn: configuration.builtInFiles)
    let pages = try PageController.library(pageFiles)
    let scripts = PageController.scripts(pageFiles)
    let router = buildRouter(
        components: components,
        operations: OperationsController(
            migrator: migrator, metrics: metrics, openAPIDocument: ByteBuffer(bytes: document), metricsToken: configuration.metricsToken,
            beforeScrape: held.record, readinessTimeout: configuration.readinessTimeout
        ),
        pages: pages,
        scripts: scripts,
        map: MapAssets.load(configuration, logger: logger),
        configuration: configuration
    )
    var services: [any Service] = [
        PoolService(database),
        components.requestDeadlines,
        TokenJanitor(database: database, logger: logger),
        EventListener(
            database: database,
            handlers: [
                EventListener.channel: EventListener.notifying(components.changes),
                EventListener.sosChannel: EventListener.notifying(components.sosChanges),
                AggregateQueryStore.channel: EventListener.notifying(components.aggregateAnswers),
                ImportStore.channel: EventListener.notifying(components.importsQueued),
                RunPositionStore.channel: { [hubs = components.liveHubs] in
                    for hub in hubs { hub.receive($0) }
                },
                AccessTokenStore.credentialsChannel: { [credentials = components.credentials] payload in
                    if let payload { credentials?.forget(hex: payload) } else { credentials?.listening() }
                },
            ], lost: { [credentials = components.credentials] in credentials?.deaf() }, logger: logger),
        RequestExpiry(database: database, interval: configuration.requestExpirySweep, schemaReady: components.schemaReady, logger: logger),
        AggregateSubscriptionRunner(
            subscriptions: components.aggregateSubscriptions, interval: configuration.aggregateSubscriptionSweep,
            schemaReady: components.schemaReady, logger: logger
        ),
        InsightSweeper(database: database, interval: configuration.insightSweep, schemaReady: components.schemaReady, logger: logger),
        SampleCompactor(database: database, interval: configuration.compactionInterval, schemaReady: components.schemaReady, logger: logger),
        PopulationIndexMerger(database: database, answers: components.aggregateAnswers, schemaReady: components.schemaReady, logger: logger),
        ActivityBackfill(database: database, schemaReady: components.schemaReady, logger: logger),
    ]
    services.append(
        MailDispatcher(
            database: database, transport: mailTransport(configuration, logger: logger), sender: configuration.mailSender,
            queued: components.mailQueued, schemaReady: components.schemaReady, logger: logger
        ))
    for _ in 0..<configuration.importWorkers {
        services.append(
            ImportWorker(
                database: database, dataManager: components.dataManager, queued: components.importsQueued, schemaReady: components.schemaReady,
                settings: configuration.importSettings, logger: logger
            ))
    }
    if let replica { services.append(replica) }
    if let dispatcher { services.append(dispatcher) }

    if let url = configuration.sosDispatchURL, let secret = configuration.sosDispatchSecret {
        services.append(
            HTTPDispatchCentreService(
                url: url, secret: secret, timeout: configuration.sosDispatchTimeout, database: database, signal: components.sosChanges,
                schemaReady: components.schemaReady, logger: logger
            ))
    } else {
        logger.notice("SOS_DISPATCH_URL is not set: this instance detects emergencies but dispatches none (another instance may)")
    }
    let webSockets = Router(context: LiveSocketContext.self)
    let liveSocket = RunLiveSocket(hub: components.liveHub, hubV1: components.liveHubV1, open: components.held.webSockets)
    liveSocket.addRoutes(to: webSockets)
    liveSocket.addPlainRoute(to: router)
    var app = Application(
        router: router,
        server: HTTPServerBuilder { [webSocketResponder = webSockets.buildResponder(), idleTimeout = configuration.idleTimeout] responder in
            ProblemAnsweringChannel(
                inner: HTTP1WebSocketUpgradeChannel(
                    responder: responder, webSocketResponder: webSocketResponder,
                    configuration: .init(http1: .init(idleTimeout: .nanoseconds(Int64(idleTimeout.inSeconds * 1e9))), ws: .init())
                ))
        },
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "data4help"),
        services: services.map { roster.watching($0) },
        logger: logger
    )
    app.beforeServerStarts {
        let report = try await migrator.migrate()
        logger.info(
            "database schema is current",
            metadata: [
                "migrations.applied": "\(report.applied.count)", "migrations.previously": "\(report.alreadyApplied)",
            ])
        try await components.partitions.ensureAround(Date())
        try await components.cursorKey.load(from: database)
        components.schemaReady.open()
    }
    return app
}

/// Where e-mail goes: the SMTP relay when one is set, else `.eml` files in a pickup directory.
private func mailTransport(_ configuration: AppConfiguration, logger: Logger) -> any MailTransport {
    if let relay = configuration.mailRelay {
        return SMTPTransport(
            host: relay.host, port: relay.port, heloName: URL(string: configuration.registrationSettings.publicBaseURL)?.host ?? "localhost")
    }
    let directory = configuration.mailPickupDirectory ?? URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("mail").path
    logger.notice("MAIL_SMTP_URL is not set: e-mail is written to a pickup directory, not sent", metadata: ["mail.directory": "\(directory)"])
    return PickupDirectoryTransport(directory: URL(fileURLWithPath: directory))
}

/// The logic-tier components, built once per application over one connection pool.
struct Components {
    /// The request timeout's clock (`RequestTimeoutMiddleware`), swept by a service of its own.
    let requestDeadlines: RequestDeadlines
    let authenticator: Authenticator
    let sessions: SessionService
    let individuals: IndividualAccounts
    let thirdParties: ThirdPartyAccounts
    /// Registration of both kinds of account, confirmed by e-mail.
    let registrations: RegistrationService
    /// Bumped when a message is queued, so that this instance's `MailDispatcher` sends it at once.
    let mailQueued = ChangeSignal()
    let apiKeys: APIKeyService
    let partitions: PartitionMaintainer
    let storedData: StoredDataEvents
    let dataManager: DataManager
    let imports: ImportService
    let workouts: WorkoutService
    /// Bumped whenever PostgreSQL announces a queued import (`data4help_imports`).
    let importsQueued = ChangeSignal()
    let ownData: OwnDataReader
    let sources: SourcePreferences
    let accessRequests: AccessRequestService
    let grantedData: GrantedDataReader
    let accessLog: AccessLog
    let partyEvents: PartyEvents
    let subscriptionFeed: SubscriptionFeed
    let webhooks: WebhookEndpoints
    let aggregates: AggregateService
    let sosSettings: SOSSettingsService
    let sosIncidents: SOSIncidentService
    let watchRules: WatchRuleService
    let care: CareService
    let offers: OfferService
    let shareLinks: ShareLinkService
    let privacyRecord: PrivacyRecordService
    let insights: InsightService
    /// Per-address limits of the pages people without an account open (share links).
    let visitorLimiter: RateLimiter
    let directory: OrganisationDirectory
    let runEvents: RunEventService
    let livePositions: LivePositions
    /// This instance's spectators of live runs, fed by `data4help_runs` notifications: version 2
    /// of the live protocol, and version 1 (kept for one release).
    let liveHub: LiveRunHub
    let liveHubV1: LiveRunHub
    var liveHubs: [LiveRunHub] { [liveHub, liveHubV1] }
    /// Bumped whenever PostgreSQL announces a new AutomatedSOS incident.
    let sosChanges: ChangeSignal
    let aggregateSubscriptions: AggregateSubscriptions
    /// Bumped whenever PostgreSQL announces that an aggregate query ended.
    let aggregateAnswers = ChangeSignal()
    /// Bumped whenever PostgreSQL announces new events or deliveries (see `EventListener`).
    let changes: ChangeSignal
    /// Opened once the start-up migrations have run; background workers wait for it.
    let schemaReady: StartupGate
    /// The database an export reads its history from (the caught-up replica, or the primary).
    let exportDatabase: @Sendable () async -> Database
    /// The key that authenticates pagination cursors, loaded before the server starts.
    let cursorKey = CursorKey()
    /// Per-credential request buckets (`RATE_LIMIT_REQUESTS` per `RATE_LIMIT_WINDOW`).
    let rateLimiter: RateLimiter
    /// Recently resolved bearer credentials (`CREDENTIAL_CACHE_SECONDS`; nil when 0).
    let credentials: CredentialCache?
    /// Long-lived connections being served, for `HeldResourceGauges`.
    let held = HeldResourceGauges.Counts()

    init(database: Database, replica: ReadReplica? = nil, configuration: AppConfiguration, logger: Logger) {
        let hasher = PasswordHasher()
        requestDeadlines = RequestDeadlines(limit: configuration.requestTimeout)
        credentials = configuration.credentialCacheLifetime.map { CredentialCache(lifetime: $0) }
        authenticator = Authenticator(
            tokens: AccessTokenStore(database: database), apiKeys: APIKeyStore(database: database), cache: credentials,
            uses: CredentialUseWriter(database: database))
        sessions = SessionService(
            database: database, hasher: hasher, tokenLifetime: configuration.tokenLifetime, throttle: configuration.loginThrottle)
        individuals = IndividualAccounts(database: database, hasher: hasher, throttle: configuration.loginThrottle)
        thirdParties = ThirdPartyAccounts(database: database, hasher: hasher)
        registrations = RegistrationService(database: database, hasher: hasher, settings: configuration.registrationSettings, mailQueued: mailQueued)
        apiKeys = APIKeyService(database: database)
        partitions = PartitionMaintainer(database: database)
        storedData = StoredDataEvents()
        dataManager = DataManager(
            database: database, partitions: partitions, events: storedData,
            checks: [AnomalyDetector(logger: logger)])
        imports = ImportService(database: database, maximumBytes: configuration.importMaxBytes, followAhead: configuration.importSettings.followAhead)
        workouts = WorkoutService(database: database)
        ownData = OwnDataReader(database: database)
        sources = SourcePreferences(database: database)
        accessRequests = AccessRequestService(database: database, pendingLifetime: configuration.requestLifetime)
        grantedData = GrantedDataReader(database: database)
        accessLog = AccessLog(database: database)
        partyEvents = PartyEvents(database: database)
        subscriptionFeed = SubscriptionFeed(events: partyEvents)
        webhooks = WebhookEndpoints(database: database, allowPrivateNetworks: configuration.webhookAllowPrivateNetworks)
        changes = ChangeSignal()
        aggregates = AggregateService(
            database: database, readDatabase: replica?.database, budget: configuration.privacyBudget,
            mechanism: AggregateMechanism(minimumGroup: Int64(configuration.aggregateMinimumGroup)), answers: aggregateAnswers
        )
        aggregateSubscriptions = AggregateSubscriptions(database: database, service: aggregates)
        sosSettings = SOSSettingsService(database: database)
        sosIncidents = SOSIncidentService(database: database)
        watchRules = WatchRuleService(database: database)
        care = CareService(
            database: database, signInURL: configuration.registrationSettings.publicBaseURL + "/me/login", mailQueued: mailQueued)
        offers = OfferService(database: database)
        shareLinks = ShareLinkService(database: database, hasher: hasher)
        privacyRecord = PrivacyRecordService(database: database)
        insights = InsightService(database: database)
        directory = OrganisationDirectory(database: database)
        runEvents = RunEventService(database: database)
        livePositions = LivePositions(database: database)
        liveHub = LiveRunHub(interval: configuration.liveUpdateInterval, wire: WebSocketFramedWire(inner: LiveCompact())) { [livePositions] in
            try await livePositions.snapshot(of: $0)
        }
        liveHubV1 = LiveRunHub(interval: configuration.liveUpdateInterval, wire: WebSocketFramedWire(inner: LiveJSON())) { [livePositions] in
            try await livePositions.snapshot(of: $0)
        }
        sosChanges = ChangeSignal()
        schemaReady = StartupGate()
        exportDatabase = { await replica?.readingYourWrites() ?? database }
        rateLimiter = RateLimiter(limit: configuration.rateLimitRequests, window: configuration.rateLimitWindow)
        visitorLimiter = RateLimiter(limit: configuration.sharePageRequestsPerMinute, window: .seconds(60))
    }
}

/// The routes of both API surfaces and the operations endpoints, behind the common middleware:
/// request id → client address → metrics → access log → problem+json → request timeout; each
/// authenticated surface adds authentication → rate limit.
func buildRouter(
    components: Components, operations: OperationsController, pages: MustacheLibrary, scripts: [String: ByteBuffer],
    map: MapAssets, configuration: AppConfiguration
) -> Router<AppRequestContext> {
    let routes = RouteTable()
    let router = RecordingRouter(router: Router(context: AppRequestContext.self, options: .autoGenerateHeadEndpoints), table: routes)
    router.add(middleware: RequestTracingMiddleware())
    router.add(middleware: RequestIDMiddleware())
    router.add(middleware: SecurityHeadersMiddleware())
    router.add(middleware: CursorKeyMiddleware(key: components.cursorKey))
    router.add(middleware: ClientAddressMiddleware(trustForwardedFor: configuration.trustProxyHeaders))
    router.add(middleware: MetricsMiddleware())
    router.add(middleware: AccessLogMiddleware())
    router.add(middleware: ProblemMiddleware(routes: routes))
    router.add(middleware: RequestTimeoutMiddleware(deadlines: components.requestDeadlines, exempt: ImportController.isUpload))
    let rateLimit = RateLimitMiddleware(limiter: components.rateLimiter)

    operations.addRoutes(to: router)
    SampleTypeController().addRoutes(to: router)
    PublicRunController(runs: components.runEvents).addRoutes(to: router)
    PublicRunLiveController(live: components.livePositions).addRoutes(to: router)
    PageController(library: pages, runs: components.runEvents, scripts: scripts, map: map).addRoutes(to: router)
    SharedDataPage(links: components.shareLinks, library: pages, limiter: components.visitorLimiter, maxBodyBytes: configuration.maxBodyBytes)
        .addRoutes(to: router)
    let portalAccounts = PortalAccounts(
        authenticator: components.authenticator, sessions: components.sessions, registrations: components.registrations,
        individuals: components.individuals, thirdParties: components.thirdParties
    )
    OrganisationPortal(
        site: PortalSite(
            surface: .thirdParty, pages: PortalPages(library: pages), accounts: portalAccounts, maxBodyBytes: configuration.maxBodyBytes,
            rateLimiter: components.rateLimiter
        ),
        apiKeys: components.apiKeys, requests: components.accessRequests, grantedData: components.grantedData,
        aggregates: components.aggregates, webhooks: components.webhooks, offers: components.offers, directory: components.directory
    ).addRoutes(to: router)
    IndividualPortal(
        site: PortalSite(
            surface: .individual, pages: PortalPages(library: pages, map: map), accounts: portalAccounts,
            maxBodyBytes: configuration.maxBodyBytes,
            allowPrivateWebhooks: configuration.webhookAllowPrivateNetworks, rateLimiter: components.rateLimiter
        ),
        accounts: components.individuals, requests: components.accessRequests, accessLog: components.accessLog, ownData: components.ownData,
        sosSettings: components.sosSettings, sosIncidents: components.sosIncidents, imports: components.imports, workouts: components.workouts,
        watchRules: components.watchRules, care: components.care, runs: components.runEvents, offers: components.offers,
        directory: components.directory, shareLinks: components.shareLinks, privacyRecord: components.privacyRecord,
        shareBaseURL: configuration.registrationSettings.publicBaseURL, insights: components.insights
    ).addRoutes(to: router)
    let body = JSONBody(limit: configuration.maxBodyBytes)

    // /api/users — individuals.
    let users = router.group("api/users")
    let userAccounts = UserAccountController(accounts: components.individuals, registrations: components.registrations, body: body)
    let userSessions = SessionController<IndividualRequestContext>(sessions: components.sessions, body: body)
    userAccounts.addRegistration(to: users)
    userSessions.addLogin(to: users)
    let authenticatedUsers =
        users
        .add(middleware: BearerAuthenticationMiddleware(authenticator: components.authenticator, surface: .individual))
        .add(middleware: rateLimit)
        .group(context: IndividualRequestContext.self)
    userAccounts.addAuthenticated(to: authenticatedUsers)
    userSessions.addAuthenticated(to: authenticatedUsers)
    UserDataController(dataManager: components.dataManager, ownData: components.ownData, body: body).addRoutes(to: authenticatedUsers)
    SourceController(preferences: components.sources, body: body).addRoutes(to: authenticatedUsers)
    WatchRuleController(service: components.watchRules, body: body).addRoutes(to: authenticatedUsers)
    CareController(service: components.care, body: body).addRoutes(to: authenticatedUsers)
    UserOfferController(offers: components.offers, directory: components.directory, body: body).addRoutes(to: authenticatedUsers)
    ShareLinkController(links: components.shareLinks, body: body, baseURL: configuration.registrationSettings.publicBaseURL)
        .addRoutes(to: authenticatedUsers)
    PrivacyRecordController(record: components.privacyRecord, accounts: components.individuals).addRoutes(to: authenticatedUsers)
    ImportController(imports: components.imports).addRoutes(to: authenticatedUsers)
    WorkoutController(workouts: components.workouts).addRoutes(to: authenticatedUsers)
    InsightController(insights: components.insights).addRoutes(to: authenticatedUsers)
    UserExportController(
        accounts: components.individuals, sos: components.sosSettings, sources: { ExportSource(database: await components.exportDatabase()) }
    )
    .addRoutes(to: authenticatedUsers)
    UserRequestController(requests: components.accessRequests, accessLog: components.accessLog, body: body).addRoutes(to: authenticatedUsers)
    WebhookController<IndividualRequestContext>(endpoints: components.webhooks, body: body, prefix: "notifications").addRoutes(to: authenticatedUsers)
    SOSSettingsController(settings: components.sosSettings, body: body, allowPrivateNetworks: configuration.webhookAllowPrivateNetworks)
        .addRoutes(to: authenticatedUsers)
    SOSIncidentController(incidents: components.sosIncidents)
        .addRoutes(to: authenticatedUsers)
    RunEventController(runs: components.runEvents, body: body).addRoutes(to: authenticatedUsers)
    RunPositionController(live: components.livePositions, body: body).addRoutes(to: authenticatedUsers)

    // /api/thirdparties — organisations (tenants).
    let thirdParties = router.group("api/thirdparties")
    let partyAccounts = ThirdPartyAccountController(accounts: components.thirdParties, registrations: components.registrations, body: body)
    let partySessions = SessionController<ThirdPartyRequestContext>(sessions: components.sessions, body: body)
    partyAccounts.addRegistration(to: thirdParties)
    partySessions.addLogin(to: thirdParties)
    let authenticatedParties =
        thirdParties
        .add(middleware: BearerAuthenticationMiddleware(authenticator: components.authenticator, surface: .thirdParty))
        .add(middleware: rateLimit)
        .group(context: ThirdPartyRequestContext.self)
    partyAccounts.addAuthenticated(to: authenticatedParties)
    // Managing the account — sessions, API keys, the webhook — needs a login token, never an API key.
    let partyManagement = authenticatedParties.group().add(middleware: LoginSessionRequiredMiddleware<ThirdPartyRequestContext>())
    partySessions.addAuthenticated(to: partyManagement)
    APIKeyController(keys: components.apiKeys, body: body).addRoutes(to: partyManagement)
    AccessRequestController(requests: components.accessRequests, body: body).addRoutes(to: authenticatedParties)
    let offerRoutes = OfferController(offers: components.offers, directory: components.directory, body: body)
    offerRoutes.addRoutes(to: authenticatedParties)
    offerRoutes.addProfileRoutes(to: partyManagement)
    GrantedDataController(granted: components.grantedData).addRoutes(to: authenticatedParties)
    SubscriptionFeedController(feed: components.subscriptionFeed).addRoutes(to: authenticatedParties)
    WebhookController<ThirdPartyRequestContext>(endpoints: components.webhooks, body: body, prefix: "webhook").addRoutes(to: partyManagement)
    EventStreamController(events: components.partyEvents, signal: components.changes, open: components.held.eventStreams).addRoutes(
        to: authenticatedParties)
    AggregateController(aggregates: components.aggregates, subscriptions: components.aggregateSubscriptions, body: body).addRoutes(
        to: authenticatedParties)

    // /api/dispatch — the AutomatedSOS dispatch centre reports back (signed, not an account).
    DispatchCentreController(incidents: components.sosIncidents, secret: configuration.sosDispatchSecret, body: body)
        .addRoutes(to: router.group("api/dispatch"))

    return router.router
}
