/// Metrics at one moment: families of samples, as Prometheus text or one by one.
package struct MetricsSnapshot {
    package enum Kind: String { case counter, gauge, histogram }

    package struct Family {
        package let name: String
        package let kind: Kind
        package let help: String
        /// Label pairs (`code="1006"` as `("code", "1006")`) and values; for a histogram its
        /// `_bucket`, `_sum` and `_count` lines with their own names.
        package var samples: [(name: String, labels: [(String, String)], value: Double)]
    }

    package private(set) var families: [Family] = []

    package init() {}

    /// `samples`: label pairs (none for a metric without labels) and values.
    package mutating func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: [(String, String)], value: Int)]) {
        families.append(Family(name: name, kind: Kind(rawValue: type) ?? .gauge, help: help,
                               samples: samples.map { (name, $0.labels, Double($0.value)) }))
    }

    package mutating func gauge(_ name: String, _ help: String, _ samples: [(labels: [(String, String)], value: Double)]) {
        families.append(Family(name: name, kind: .gauge, help: help, samples: samples.map { (name, $0.labels, $0.value) }))
    }

    package mutating func histogram(_ name: String, _ help: String, buckets: [(bound: Double, count: Int)], sum: Double, count: Int) {
        let lines = buckets.map { (name + "_bucket", [("le", "\($0.bound)")], Double($0.count)) }
            + [(name + "_bucket", [("le", "+Inf")], Double(count)), (name + "_sum", [], sum), (name + "_count", [], Double(count))]
        families.append(Family(name: name, kind: .histogram, help: help, samples: lines))
    }

    /// The Prometheus text format (integers without a fraction).
    package var text: String {
        var text = ""
        for family in families {
            text += "# HELP \(family.name) \(family.help)\n# TYPE \(family.name) \(family.kind.rawValue)\n"
            for (name, labels, value) in family.samples {
                let shown = value.rounded() == value && abs(value) < 1e15 ? String(Int(value)) : "\(value)"
                let labelText = labels.map { "\($0.0)=\"\($0.1)\"" }.joined(separator: ",")
                text += labelText.isEmpty ? "\(name) \(shown)\n" : "\(name){\(labelText)} \(shown)\n"
            }
        }
        return text
    }
}
