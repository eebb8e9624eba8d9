import Prometheus

/// The swift-metrics backend the server publishes at `/metrics`.
package enum PrometheusMetrics {
    /// A factory over the registry whose metric and label names are valid Prometheus names
    /// (`hb.requests` becomes `hb_requests`). Bootstrap it once per process.
    package static func factory(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.nameAndLabelSanitizer = { name, labels in
            (sanitise(name), labels.map { (sanitise($0.0), $0.1) })
        }
        return factory
    }

    private static func sanitise(_ name: String) -> String {
        String(name.map { $0.isLetter || $0.isNumber || $0 == "_" ? $0 : "_" })
    }
}
