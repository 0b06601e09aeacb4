// swift-tools-version: 6.2
import PackageDescription

/// ScrollSync: a WebSocket live-sync scroll server and terminal client.
///
/// Module layering (each depends only on the ones above it):
///   COpenSSL, CZlib  – system libraries (Debian: libssl-dev, zlib1g-dev)
///   CLinux           – epoll and eventfd headers
///   Bytes            – SharedBytes, stdlib and libc only
///   TextSafety       – network text made safe to show (terminal, log, HTTP body), stdlib only
///   Deflate          – bounded Inflater / Deflater over zlib
///   HTTP1            – sans-I/O HTTP/1.1: request heads parsed in place, fields, responses
///   WebSocketCore    – sans-I/O HTTP upgrade (SHA-1 from libcrypto), frames, UTF-8, close, permessage-deflate
///   ScrollModel      – the wire model: messages, scroll state, wire JSON; pure, stdlib only (clients see it)
///   RoomKit          – the server's room rules without I/O: RoomCore, the machine, seq reservation, presence
///                      throttle, what a node accepts from another, the engine protocol; ScrollModel only
///   Transport        – epoll loops, sockets, write queues, TLS; no WebSocket knowledge
///   WebSocketChannel – one WebSocket on a Transport channel (`WebSocketLink`), for server and client:
///                      reading, sending, ping, the close handshake and its timeout, idle, the end
///   Access           – who may in: presenter and follow keys, signed tokens, key admission, origins,
///                      per-address limits (connections, room creations, key failures); RoomKit, Transport
///   RedisClient      – RESP2/RESP3 client (pipelining, pub/sub, scripts, ACL, TLS) on a Transport loop
///   Cluster          – rooms shared between nodes: RedisRoomEngine, its scripts, ShardedRoomEngine, channel
///                      signatures; RoomKit, Access, RedisClient (never the hub: it talks to it as SharedRoomsDelegate)
///   Documents        – documents as blocks with normative ids, inline markup, display widths, HTML
///   TerminalUI       – layout, Elm-style present/follow models, terminal renderer
///   TerminalFrames   – the follower's view rendered on a server, once per size, for terminal readers (/tty)
///   SyncClient       – WebSocket and room clients on the same transport
///   Hub              – the rooms of a node: LocalRoomHub, members (they send through a WebSocketLink),
///                      store, recordings, terminal readers, server counters; RoomKit, Access, TerminalFrames
///                      (never Cluster or SyncServer: it hears its engine as RoomKit's RoomEngine)
///   Operations       – configuration and operations: the setting table, the configuration, its checks and
///                      warnings, the log's output, the metrics' format and bridge; Access, RedisClient, Transport, WebSocketCore (never Hub,
///                      Cluster or SyncServer)
///   SyncServer       – the front (server, router, endpoints, WebSocket peer, viewer, metrics); Hub, Cluster,
///                      Operations; docs/architecture.md draws the picture
///   scrollsync       – the command line
let package = Package(
    name: "ScrollSync",
    products: [
        .executable(name: "scrollsync", targets: ["scrollsync"]),
        .library(name: "WebSocketCore", targets: ["WebSocketCore"]),
        .library(name: "SyncClient", targets: ["SyncClient"]),
        // Documents as blocks with ids, wrapped to a width, and PROTOCOL §3's mapping onto them.
        .library(name: "TerminalUI", targets: ["TerminalUI"]),
        .library(name: "ScrollModel", targets: ["ScrollModel"]),
        .library(name: "SyncServer", targets: ["SyncServer"]),
        // The server's configuration (`ServerConfiguration`, the setting table), for an
        // application that embeds `SyncServer`.
        .library(name: "Operations", targets: ["Operations"]),
        .library(name: "Transport", targets: ["Transport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.1.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        .systemLibrary(name: "CLinux"),
        .target(name: "Bytes"),
        .target(name: "TextSafety"),
        .target(name: "ScrollModel"),
        .target(name: "RoomKit", dependencies: ["ScrollModel"]),
        .target(name: "Deflate", dependencies: ["CZlib", "Bytes"]),
        .target(name: "HTTP1", dependencies: ["TextSafety"]),
        .target(name: "WebSocketCore", dependencies: ["Bytes", "COpenSSL", "Deflate", "HTTP1", "TextSafety"]),
        .target(
            name: "Transport",
            dependencies: [
                "Bytes", "COpenSSL", "CLinux",
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(name: "WebSocketChannel", dependencies: ["Bytes", "HTTP1", "Transport", "WebSocketCore"]),
        .target(name: "RedisClient", dependencies: ["Bytes", "COpenSSL", "Transport"]),
        .target(
            name: "Access",
            dependencies: [
                "COpenSSL", "HTTP1", "RoomKit", "ScrollModel", "Transport", "WebSocketCore",
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "Cluster",
            dependencies: [
                "Access", "COpenSSL", "RedisClient", "RoomKit", "ScrollModel", "Transport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "Hub",
            dependencies: [
                "Access", "Bytes", "CLinux", "COpenSSL", "Deflate", "HTTP1", "RoomKit", "ScrollModel", "TerminalFrames", "Transport", "WebSocketChannel", "WebSocketCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        // Configuration and operations: the setting table, the configuration it fills, its checks
        // and warnings, the log's output, the metrics' format and swift-metrics bridge; never the
        // hub, the cluster or the front.
        .target(name: "Operations", dependencies: [
            "Access", "RedisClient", "ScrollModel", "TextSafety", "Transport", "WebSocketCore", .product(name: "Logging", package: "swift-log"),
            .product(name: "CoreMetrics", package: "swift-metrics"), .product(name: "DequeModule", package: "swift-collections"),
        ]),
        .target(name: "FuzzHarnesses", dependencies: ["Access", "Deflate", "Documents", "HTTP1", "Hub", "Operations", "RedisClient", "RoomKit", "ScrollModel", "SyncClient", "SyncServer", "TerminalUI", "TextSafety", "WebSocketCore"]),
        .target(
            name: "SyncServer",
            dependencies: [
                "Bytes", "Deflate", "Documents", "HTTP1", "WebSocketChannel", "WebSocketCore", "Transport", "ScrollModel", "RoomKit", "Access", "Cluster", "Hub", "Operations", "COpenSSL", "CLinux", "RedisClient", "TextSafety", "TerminalFrames",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            resources: [
                // The browser viewer's files, embedded in the binary (no files to install).
                .embedInCode("Viewer/viewer.js"),
                .embedInCode("Viewer/viewer-follow.js"),
                .embedInCode("Viewer/viewer-player.js"),
                .embedInCode("Viewer/viewer.css"),
            ]
        ),
        .target(name: "Documents", dependencies: ["ScrollModel", "TextSafety"]),
        .target(name: "TerminalUI", dependencies: ["Documents", "ScrollModel", "CLinux", "TextSafety", "Transport"]),
        // The follower's view rendered on a server for terminals it streams to (`/rooms/NAME/tty`).
        .target(name: "TerminalFrames", dependencies: ["Bytes", "ScrollModel", "TerminalUI", "TextSafety"]),
        .target(
            name: "SyncClient",
            dependencies: [
                "Bytes", "HTTP1", "WebSocketChannel", "WebSocketCore", "Transport", "ScrollModel",
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        // `scrollsync load`: thousands of clients and their statistics (HdrHistogram).
        .target(
            name: "LoadTesting",
            dependencies: [
                "SyncClient", "WebSocketCore", "Transport", "ScrollModel",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        .executableTarget(
            name: "scrollsync",
            dependencies: [
                "SyncServer", "Operations", "Access", "SyncClient", "LoadTesting", "TerminalUI", "TerminalFrames", "ScrollModel", "Transport", "TextSafety",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Helpers shared by test targets (a seeded random generator); not a product.
        // README "Use it from Swift": built with the package, run by SwiftAPITests.
        .executableTarget(name: "follow-example", dependencies: ["SyncClient", "TerminalUI"], path: "Examples/FollowFromSwift"),
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1"]),
        .testTarget(name: "WebSocketCoreTests", dependencies: ["WebSocketCore", "HTTP1", "Deflate", "Bytes", "TestSupport"]),
        .testTarget(name: "ScrollModelTests", dependencies: ["ScrollModel", "RoomKit", "TestSupport"]),
        .testTarget(name: "RoomKitTests", dependencies: ["RoomKit", "ScrollModel", "TestSupport"]),
        .testTarget(
            name: "HubTests",
            dependencies: ["Hub", "Access", "CLinux", "RoomKit", "ScrollModel", "Transport", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "TransportTests", dependencies: ["Transport", "Bytes"]),
        .testTarget(name: "OperationsTests", dependencies: ["Operations", "ScrollModel", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "WebSocketChannelTests", dependencies: ["WebSocketChannel", "WebSocketCore", "Transport", "Bytes"]),
        .testTarget(name: "RedisClientTests", dependencies: ["RedisClient"]),
        .testTarget(name: "FuzzHarnessesTests", dependencies: ["FuzzHarnesses", "HTTP1", "ScrollModel", "WebSocketCore"]),
        .testTarget(name: "SyncClientTests", dependencies: ["SyncClient", "HTTP1", "LoadTesting", "WebSocketCore", "Transport", "ScrollModel"]),
        .testTarget(name: "TerminalUITests", dependencies: ["TerminalUI", "ScrollModel", "TextSafety", "TestSupport"]),
        .testTarget(name: "TerminalFramesTests", dependencies: ["TerminalFrames", "TerminalUI", "ScrollModel", "Bytes"]),
        .testTarget(
            name: "SyncServerTests",
            dependencies: [
                "SyncServer", "Operations", "Hub", "RoomKit", "Access", "Cluster", "SyncClient", "LoadTesting", "WebSocketCore", "Deflate", "Transport", "ScrollModel", "CLinux", "RedisClient", "TerminalUI",
                "scrollsync", "follow-example", "TestSupport", "TerminalFrames", .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            exclude: ["Peers", "Simulation/seeds.txt", "Simulation/seeds-redis-stops.txt", "Simulation/seeds-follow-keys.txt", "Simulation/seeds-all.txt"]
        ),
    ]
)

// Coverage-guided fuzzing (Scripts/fuzz, issue 22): the libFuzzer driver is built only with
// SCROLLSYNC_FUZZ=1 (and -sanitize=fuzzer,address); its checks live in FuzzHarnesses, which
// every build compiles and `swift test` runs on the saved inputs in Fuzz/.
if Context.environment["SCROLLSYNC_FUZZ"] != nil {
    package.targets += [
        .target(name: "CFuzzDriver", path: "Fuzz/CFuzzDriver"),
        .executableTarget(name: "scrollsync-fuzz", dependencies: ["CFuzzDriver", "FuzzHarnesses"], path: "Fuzz/Driver"),
    ]
}
