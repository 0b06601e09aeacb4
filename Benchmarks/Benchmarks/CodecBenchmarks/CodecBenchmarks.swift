import Benchmark
import Glibc
import ScrollModel
import SyncServer
import Transport
import WebSocketCore

/// A typical `state` broadcast (about 190 bytes).
let state = ScrollState(
    seq: 4242, offset: 1234, viewport: 40, content: 5000, progress: 0.2485, direction: .down,
    anchor: Anchor(id: "installation.3", fraction: 0.25), atTop: false, atBottom: false,
    by: "5f0c2a9e41b7d3c8", t: "1795340946170", doc: "859e69d42b6a8b94")
let stateJSON = ServerMessage.state(state)

/// A masked client frame carrying `payload`.
func clientFrame(_ payload: [UInt8]) -> [UInt8] {
    let client = WebSocketConnection(role: .client)
    payload.withUnsafeBytes { _ = client.send(text: $0) }
    var out = [UInt8]()
    client.drainOutbound { out += $0.array }
    return out
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.throughput, .wallClock, .mallocCountTotal], maxDuration: .seconds(2))

    Benchmark("Encode state frame (server, unmasked)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(stateJSON.withUnsafeBytes { FrameEncoder.frame(opcode: .text, payload: $0) })
        }
    }

    let frame = clientFrame(stateJSON)
    Benchmark("Decode and unmask a state frame") { benchmark in
        let server = WebSocketConnection(role: .server)
        var input = frame
        for _ in benchmark.scaledIterations {
            input = frame
            input.withUnsafeMutableBytes { server.receive($0) { blackHole($0) } }
        }
    }

    var big = [UInt8](repeating: 0x61, count: 64 << 10)
    Benchmark("Unmask 64 KiB", configuration: .init(metrics: [.throughput, .wallClock])) { benchmark in
        for _ in benchmark.scaledIterations {
            big.withUnsafeMutableBytes { blackHole(Masking.apply(key: 0x1234_5678, to: $0)) }
        }
    }

    let text = Array(String(repeating: "κόσμε scroll ", count: 4096).utf8)
    Benchmark("Validate UTF-8 (57 KiB, mixed)", configuration: .init(metrics: [.throughput, .wallClock])) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(UTF8Validator.isValid(text)) }
    }

    Benchmark("Deflate + inflate a state (no context takeover)") { benchmark in
        let agreed = PerMessageDeflate(serverNoContextTakeover: true, clientNoContextTakeover: true)
        let server = WebSocketConnection(role: .server, deflate: agreed, compressionThreshold: 0)
        let client = WebSocketConnection(role: .client, deflate: agreed)
        var wire = [UInt8]()
        for _ in benchmark.scaledIterations {
            stateJSON.withUnsafeBytes { _ = server.send(text: $0) }
            wire.removeAll(keepingCapacity: true)
            server.drainOutbound { wire += $0.array }
            wire.withUnsafeMutableBytes { client.receive($0) { blackHole($0) } }
        }
    }

    Benchmark("JSON encode state") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(ServerMessage.state(state)) }
    }

    Benchmark("JSON decode state") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(stateJSON.withUnsafeBytes { try? ServerEvent.decode($0) })
        }
    }

    let scroll = Array(#"{"type":"scroll","offset":1234,"viewport":40,"content":5000,"anchor":{"id":"installation.3","fraction":0.25},"t":1795340946170}"#.utf8)
    Benchmark("JSON decode scroll (server side)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(scroll.withUnsafeBytes { try? ClientMessage.decode($0) })
        }
    }

    // One broadcast as the server makes it: the state encoded and framed once, then the
    // same bytes queued for 10,000 receivers and written out (gathered into iovecs and
    // consumed, as a channel's flush does after writev). Mallocs per broadcast show what a
    // delivery costs: the once-per-broadcast buffers, and nothing per receiver.
    var receivers = (0..<10_000).map { _ in WriteQueue() }
    let iovecs = UnsafeMutableBufferPointer<iovec>.allocate(capacity: 64)
    let warm = BroadcastFrame(text: stateJSON, deflater: nil).plain
    for index in receivers.indices {  // warm: each queue's storage exists, as on a live connection
        receivers[index].append(warm)
        receivers[index].consume(warm.count)
    }
    Benchmark("Broadcast a state to 10,000 receivers", configuration: .init(metrics: [.throughput, .wallClock, .mallocCountTotal])) { benchmark in
        for _ in benchmark.scaledIterations {
            let frame = BroadcastFrame(text: ServerMessage.state(state), deflater: nil)
            for index in receivers.indices {
                let bytes = frame.frame(forWindowBits: nil)
                receivers[index].append(bytes)
                let used = receivers[index].gather(into: iovecs)
                blackHole(used)
                receivers[index].consume(receivers[index].byteCount)
            }
        }
    }
}
