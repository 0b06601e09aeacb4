import ScrollModel

/// The sources of settings: a file, the environment, overrides; and the effective configuration printed.
extension Settings {
    /// Applies `overrides` (key → value) to `configuration`; unknown keys and bad values throw.
    public static func apply(_ overrides: [(key: String, value: JSON)], to configuration: inout ServerConfiguration, source: String) throws(ConfigurationError) {
        for (key, value) in overrides {
            guard let setting = setting(key) else {
                if all.contains(where: { $0.key.hasPrefix(key + ".") }) {
                    throw ConfigurationError("\(source): \(key): expected an object with keys \(all.filter { $0.key.hasPrefix(key + ".") }.map(\.key).joined(separator: ", "))")
                }
                let near = all.map(\.key).min { distance($0, key) < distance($1, key) }
                let hint = near.map { distance($0, key) <= 3 ? " (did you mean \($0)?)" : "" } ?? ""
                throw ConfigurationError("\(source): unknown key \(key)\(hint)")
            }
            do {
                try setting.write(&configuration, value)
            } catch {
                let name = source == "environment" ? "\(setting.environmentName) (\(key))" : key
                throw ConfigurationError("\(source): \(name): \(error.message)")
            }
        }
    }

    /// The keys and values of a configuration file's JSON text (nested objects flattened).
    public static func fileValues(_ text: String, source: String) throws(ConfigurationError) -> [(key: String, value: JSON)] {
        let json: JSON
        do { json = try JSON.parse(text) } catch { throw ConfigurationError("\(source): not JSON: \(error)") }
        guard case .object = json else { throw ConfigurationError("\(source): the top level must be an object") }
        var values = [(key: String, value: JSON)]()
        func flatten(_ json: JSON, prefix: String) {
            guard case .object(let members) = json else { values.append((prefix, json)); return }
            // An object is a value only where a key expects one; none does, so objects nest.
            for (name, value) in members { flatten(value, prefix: prefix.isEmpty ? name : prefix + "." + name) }
        }
        flatten(json, prefix: "")
        return values
    }

    /// `SCROLLSYNC_…` variables that name keys. A variable with that prefix that names no
    /// key is an error (a typo would otherwise be silently ignored).
    public static func environmentValues(_ environment: [String: String]) throws(ConfigurationError) -> [(key: String, value: JSON)] {
        var values = [(key: String, value: JSON)]()
        for (name, text) in environment.sorted(by: { $0.key < $1.key }) where name.hasPrefix("SCROLLSYNC_") {
            if name == "SCROLLSYNC_CONFIG" { continue }
            guard let setting = all.first(where: { $0.environmentName == name }) else {
                throw ConfigurationError("environment: \(name) names no configuration key")
            }
            values.append((setting.key, setting.fromText(text)))
        }
        return values
    }

    /// The effective configuration as nested JSON, secrets masked; a valid configuration file.
    public static func describe(_ configuration: ServerConfiguration) -> String {
        var root = JSON.object([])
        for setting in all {
            var value = setting.read(configuration)
            if setting.secret && !value.isNull { value = .string("********") }
            if setting.key == "redis.url", case .string(let url) = value { value = .string(Self.maskingPassword(url)) }
            root = inserting(value, at: setting.key.split(separator: ".").map(String.init)[...], into: root)
        }
        return pretty(root, indent: "")
    }

    /// A URL with the password of its user information (`//user:PASSWORD@`) masked.
    static func maskingPassword(_ url: String) -> String {
        guard let scheme = url.firstRange(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        let authority = rest.prefix { $0 != "/" }
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else { return url }
        return String(url[..<authority.index(after: colon)]) + "********" + String(url[at...])
    }

    private static func inserting(_ value: JSON, at path: ArraySlice<String>, into json: JSON) -> JSON {
        guard case .object(var members) = json, let name = path.first else { return value }
        if let index = members.firstIndex(where: { $0.0 == name }) {
            members[index].1 = inserting(value, at: path.dropFirst(), into: members[index].1)
        } else {
            members.append((name, inserting(value, at: path.dropFirst(), into: .object([]))))
        }
        return .object(members)
    }

    private static func pretty(_ json: JSON, indent: String) -> String {
        guard case .object(let members) = json, !members.isEmpty else { return compact(json) }
        let inner = indent + "  "
        return "{\n" + members.map { inner + "\"\($0.0)\": " + pretty($0.1, indent: inner) }.joined(separator: ",\n") + "\n" + indent + "}"
    }

    /// Edit distance, for suggesting the key meant.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased()), b = Array(b.lowercased())
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
