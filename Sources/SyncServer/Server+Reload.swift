package import Access
import Logging
import Operations
import ScrollModel
import Transport

/// Reloading while the server runs (SIGHUP, `systemctl reload`): a renewed certificate and
/// the settings that can change safely, with every open connection kept.
extension Server {
    /// Settings a reload takes (`Setting.reloadable`). The others are read once at start
    /// (listeners, loops, the store, Redis, the rooms' limits) and need a restart.
    public static let reloadableSettings = Set(Settings.reloadableKeys)

    /// What a reload did.
    public struct ReloadReport: Sendable {
        /// Settings now in effect that changed (keys).
        public var applied: [String] = []
        /// Settings that changed but take effect only after a restart (keys).
        public var needRestart: [String] = []
        /// Why the certificate was not taken (the old one stays), if it was not.
        public var certificateRefused: String?
        /// The certificate and key were read again (a renewal keeps their file names).
        public var certificateReloaded = false
    }

    /// Takes `configuration`'s reloadable settings; new handshakes get the certificate and key
    /// read again from their files, connections already open keep theirs. A certificate that
    /// does not load (unreadable, wrong key, expired) is refused and the old one kept. The log
    /// level is the caller's (it owns the log output); the report lists it when it changed.
    public func reload(_ configuration: ServerConfiguration) -> ReloadReport {
        let old = current.value
        var report = ReloadReport()
        for setting in Settings.all where setting.read(old) != setting.read(configuration) {
            if Self.reloadableSettings.contains(setting.key) { report.applied.append(setting.key) } else { report.needRestart.append(setting.key) }
        }
        var taken = old
        if let tls {
            if let certificate = configuration.tlsCertificateFile, let key = configuration.tlsKeyFile {
                do {
                    try tls.reload(certificateChainFile: certificate, privateKeyFile: key, ciphers: configuration.tlsCiphers)
                    report.certificateReloaded = true
                    taken.tlsCertificateFile = certificate
                    taken.tlsKeyFile = key
                    taken.tlsCiphers = configuration.tlsCiphers
                } catch {
                    report.certificateRefused = "\(error)"
                }
            } else {
                report.certificateRefused = "tls.certificate and tls.key are needed: this server listens with TLS"
            }
            if report.certificateRefused != nil { report.applied.removeAll { $0.hasPrefix("tls.") } }
        } else if configuration.tlsCertificateFile != nil {
            report.applied.removeAll { $0.hasPrefix("tls.") }
            report.needRestart += ["tls.certificate", "tls.key"].filter { !report.needRestart.contains($0) }
        }
        adminToken.set(configuration.adminToken)
        router.origins.set(OriginPolicy(allowed: configuration.allowedOrigins))
        router.connectionLimits.set(total: configuration.limits.connections, perAddress: configuration.limits.connectionsPerAddress)
        for setting in Settings.all where setting.reloadable && !setting.key.hasPrefix("tls.") {
            try? setting.write(&taken, setting.read(configuration))  // a value read from a valid configuration
        }
        current.set(taken)
        return report
    }
}
