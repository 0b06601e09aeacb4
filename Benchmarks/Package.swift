// swift-tools-version: 6.2
import PackageDescription

/// Micro benchmarks of the hot paths (ordo-one/package-benchmark; Debian: libjemalloc-dev).
/// A package of its own so that the main build and CI do not build the benchmark tooling.
///   cd Benchmarks && swift package benchmark
/// The main package is `..`; SwiftPM names a path dependency after its directory.
let main = Context.packageDirectory.split(separator: "/").dropLast().last.map(String.init) ?? "main"

let package = Package(
    name: "ScrollSyncBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.0", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "CodecBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "WebSocketCore", package: main),
                .product(name: "ScrollModel", package: main),
                .product(name: "SyncServer", package: main),
                .product(name: "Transport", package: main),
            ],
            path: "Benchmarks/CodecBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
