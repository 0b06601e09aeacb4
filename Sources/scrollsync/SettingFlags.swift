import ArgumentParser
import Operations
import ScrollModel
import SyncServer

// `serve`'s flags from the settings table (`Settings.all`): a property declares a flag by its
// name alone; its help and key come from the table, and `settingOverrides` turns the flags
// given into keys and values. `ServeFlagTests` checks that the properties and the table's
// flags are the same set.

extension Option {
    /// `--NAME VALUE`, a flag of the settings table.
    init<T: ExpressibleByArgument>(flag name: String) where Value == T? {
        self.init(name: .customLong(name), help: ArgumentHelp(Settings.flagHelp(name)))
    }

    /// `--NAME VALUE`, repeated for several.
    init<T: ExpressibleByArgument>(wrappedValue: [T], flag name: String) where Value == [T] {
        self.init(wrappedValue: wrappedValue, name: .customLong(name), parsing: .singleValue, help: ArgumentHelp(Settings.flagHelp(name)))
    }
}

extension Flag where Value == Bool {
    /// `--NAME`, a flag of the settings table that gives its setting one value.
    init(wrappedValue: Bool, flag name: String) {
        self.init(wrappedValue: wrappedValue, name: .customLong(name), help: ArgumentHelp(Settings.flagHelp(name)))
    }
}

/// A flag property whose parsed value can be read without knowing its type.
protocol SettingFlagProperty {
    var given: Any { get }
}

extension Option: SettingFlagProperty {
    var given: Any { wrappedValue }
}

extension Flag: SettingFlagProperty {
    var given: Any { wrappedValue }
}

/// The flag properties of a parsed command, by their normalized names (`maxConnections`
/// and `--max-connections` both: `maxconnections`).
func settingFlagProperties(of command: Any) -> [String: any SettingFlagProperty] {
    var properties = [String: any SettingFlagProperty]()
    for child in Mirror(reflecting: command).children {
        guard let label = child.label, let property = child.value as? any SettingFlagProperty else { continue }
        properties[normalizedFlagName(label)] = property
    }
    return properties
}

func normalizedFlagName(_ name: String) -> String {
    String(name.lowercased().filter { $0.isLetter || $0.isNumber })
}

/// The settings the flags of parsed `command` give, in the table's order (so `--in-memory`
/// wins over `--data-dir`, as the later flag of `store.directory`).
func settingOverrides(of command: Any) -> [(key: String, value: JSON)] {
    let properties = settingFlagProperties(of: command)
    var values = [(key: String, value: JSON)]()
    for setting in Settings.all {
        for flag in setting.flags {
            guard let property = properties[normalizedFlagName(flag.name)] else { continue }
            if let constant = flag.sets {
                if property.given as? Bool == true { values.append((setting.key, constant)) }
            } else if let value = flagValue(property.given) {
                values.append((setting.key, value))
            }
        }
    }
    return values
}

/// A parsed option's value as JSON; nil when it was not given.
private func flagValue(_ given: Any) -> JSON? {
    switch given {
    case let value as Int: .number(Double(value), text: String(value))
    case let value as Double: .number(value, text: String(value))
    case let value as String: .string(value)
    case let values as [String]: values.isEmpty ? nil : .array(values.map { .string($0) })
    default: nil
    }
}
