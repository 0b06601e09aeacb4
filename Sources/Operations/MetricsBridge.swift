import CoreMetrics

/// The server's metrics through swift-metrics, the ecosystem's API: an application that
/// embeds the server and bootstraps `MetricsSystem` with its backend (Prometheus, OpenTelemetry,
/// StatsD) gets every counter and gauge of `/metrics` there. The server's own counters stay
/// atomics on its hot paths; the bridge reads a snapshot once per report (a tick of loop 0,
/// only when a backend is bootstrapped) and passes counters on as increments since the last
/// report, gauges as their values. Histograms stay in `/metrics`.
package final class MetricsBridge: @unchecked Sendable {
    private let snapshot: @Sendable () -> MetricsSnapshot
    private let factory: MetricsFactory
    /// Loop 0's only (`report` runs there).
    private var counters: [String: (counter: CoreMetrics.Counter, reported: Double)] = [:]
    private var gauges: [String: Gauge] = [:]

    /// `snapshot` reads the metrics now (the front's counters, its hub's and its engine's).
    package init(snapshot: @escaping @Sendable () -> MetricsSnapshot, factory: MetricsFactory) {
        self.snapshot = snapshot
        self.factory = factory
    }

    /// Whether an application bootstrapped a backend (the default one drops everything).
    package static var backendBootstrapped: Bool { !(MetricsSystem.factory is NOOPMetricsHandler) }

    /// Passes the server's metrics on to the factory's handlers.
    package func report() {
        for family in snapshot().families where family.kind != .histogram {
            for (name, labels, value) in family.samples {
                let key = name + labels.map { "|\($0.0)=\($0.1)" }.joined()
                switch family.kind {
                case .counter:
                    let entry = counters[key] ?? (CoreMetrics.Counter(label: name, dimensions: labels, factory: factory), 0)
                    // A counter never goes back; one that restarted (a new store) counts on from there.
                    let delta = value >= entry.reported ? value - entry.reported : value
                    if delta > 0 { entry.counter.increment(by: Int64(delta)) }
                    counters[key] = (entry.counter, value)
                case .gauge:
                    let gauge = gauges[key] ?? Gauge(label: name, dimensions: labels, factory: factory)
                    gauges[key] = gauge
                    gauge.record(value)
                case .histogram:
                    break
                }
            }
        }
    }
}
