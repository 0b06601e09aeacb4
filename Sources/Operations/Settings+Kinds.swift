import ScrollModel

/// The kinds of setting: how each reads, writes and parses its values.
extension Settings {
    // MARK: Kinds of setting

    static func int(_ key: String, _ path: WritableKeyPath<ServerConfiguration, Int> & Sendable, _ range: ClosedRange<Int>, _ help: String) -> Setting {
        Setting(key: key, help: help, secret: false, read: { .number(Double($0[keyPath: path]), text: String($0[keyPath: path])) },
                write: { configuration, json throws(ConfigurationError) in configuration[keyPath: path] = try integer(json, range) },
                fromText: number)
    }

    static func optionalInt(_ key: String, _ path: WritableKeyPath<ServerConfiguration, Int?> & Sendable, _ range: ClosedRange<Int>, _ help: String) -> Setting {
        Setting(key: key, help: help, secret: false, read: { $0[keyPath: path].map { .number(Double($0), text: String($0)) } ?? .null },
                write: { configuration, json throws(ConfigurationError) in configuration[keyPath: path] = json.isNull ? nil : try integer(json, range) },
                fromText: { $0.isEmpty || $0 == "null" ? .null : number($0) })
    }

    static func double(_ key: String, _ path: WritableKeyPath<ServerConfiguration, Double> & Sendable, _ range: ClosedRange<Double>, _ help: String) -> Setting {
        Setting(key: key, help: help, secret: false, read: { .number($0[keyPath: path], text: format($0[keyPath: path])) },
                write: { configuration, json throws(ConfigurationError) in
                    guard let value = json.double, range.contains(value) else {
                        throw ConfigurationError("expected a number from \(format(range.lowerBound)) to \(format(range.upperBound)), got \(show(json))")
                    }
                    configuration[keyPath: path] = value
                }, fromText: number)
    }

    static func bool(_ key: String, _ path: WritableKeyPath<ServerConfiguration, Bool> & Sendable, _ help: String) -> Setting {
        Setting(key: key, help: help, secret: false, read: { .bool($0[keyPath: path]) },
                write: { configuration, json throws(ConfigurationError) in
                    guard let value = json.bool else { throw ConfigurationError("expected true or false, got \(show(json))") }
                    configuration[keyPath: path] = value
                },
                fromText: { text in
                    switch text.lowercased() {
                    case "true", "1", "yes", "on": .bool(true)
                    case "false", "0", "no", "off": .bool(false)
                    default: .string(text)
                    }
                })
    }

    static func string(_ key: String, _ path: WritableKeyPath<ServerConfiguration, String> & Sendable, _ help: String) -> Setting {
        Setting(key: key, help: help, secret: false, read: { .string($0[keyPath: path]) },
                write: { configuration, json throws(ConfigurationError) in
                    guard let value = json.string, !value.isEmpty else { throw ConfigurationError("expected a non-empty string, got \(show(json))") }
                    configuration[keyPath: path] = value
                }, fromText: { .string($0) })
    }

    static func optionalString(_ key: String, _ path: WritableKeyPath<ServerConfiguration, String?> & Sendable, _ help: String, secret: Bool = false) -> Setting {
        Setting(key: key, help: help, secret: secret, read: { $0[keyPath: path].map { .string($0) } ?? .null },
                write: { configuration, json throws(ConfigurationError) in
                    if json.isNull { configuration[keyPath: path] = nil; return }
                    guard let value = json.string, !value.isEmpty else { throw ConfigurationError("expected a non-empty string or null, got \(secret ? "a \(kind(json))" : show(json))") }
                    configuration[keyPath: path] = value
                }, fromText: { $0.isEmpty ? .null : .string($0) })
    }

    static func stringList(_ key: String, _ path: WritableKeyPath<ServerConfiguration, [String]> & Sendable, _ help: String) -> Setting {
        Setting(key: key, help: help, secret: false, read: { .array($0[keyPath: path].map { .string($0) }) },
                write: { configuration, json throws(ConfigurationError) in
                    guard case .array(let items) = json else { throw ConfigurationError("expected a list of strings, got \(show(json))") }
                    var values = [String]()
                    for item in items {
                        guard let value = item.string, !value.isEmpty else { throw ConfigurationError("expected a list of strings, got \(show(item)) in it") }
                        values.append(value)
                    }
                    configuration[keyPath: path] = values
                },
                fromText: { .array($0.split(separator: ",").map { .string($0.trimmingPrefix(while: { $0 == " " }).description) }) })
    }

    static func choice(_ key: String, _ path: WritableKeyPath<ServerConfiguration, ServerConfiguration.LogOptions.Level> & Sendable, _ help: String) -> Setting {
        Setting(key: key, help: help, secret: false, read: { .string($0[keyPath: path].rawValue) },
                write: { configuration, json throws(ConfigurationError) in
                    guard let text = json.string, let value = ServerConfiguration.LogOptions.Level(rawValue: text) else {
                        throw ConfigurationError("expected one of \(ServerConfiguration.LogOptions.Level.allCases.map(\.rawValue).joined(separator: ", ")), got \(show(json))")
                    }
                    configuration[keyPath: path] = value
                }, fromText: { .string($0) })
    }

    static func integer(_ json: JSON, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard let value = json.double, value.rounded() == value, value >= Double(range.lowerBound), value <= Double(range.upperBound) else {
            throw ConfigurationError("expected a whole number from \(range.lowerBound) to \(range.upperBound), got \(show(json))")
        }
        return Int(value)
    }

    static func number(_ text: String) -> JSON {
        Double(text).map { .number($0, text: text) } ?? .string(text)
    }

    static func format(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    static func kind(_ json: JSON) -> String {
        switch json {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "list"
        case .object: "object"
        }
    }

    static func show(_ json: JSON) -> String {
        let text = compact(json)
        return text.count > 60 ? kind(json) : text
    }
}

extension Settings {
    /// `json` in one line, as a file would hold it.
    static func compact(_ json: JSON) -> String {
        var writer = JSONWriter()
        writer.value(json)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
