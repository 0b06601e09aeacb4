import Testing
@testable import LoadTesting

/// The load tool reads `seq` and `t` from every delivery without a JSON parser.
@Suite("FastScan")
struct FastScanTests {
    func integer(_ key: StaticString, _ text: String) -> Int64? {
        Array(text.utf8).withUnsafeBytes { FastScan.integer(after: key, in: $0) }
    }

    @Test func findsTheKeyWherever() {
        let state = #"{"type":"state","seq":42,"offset":-3,"anchor":{"id":"p:7","fraction":0.5},"t":1234567890123}"#
        #expect(integer("\"seq\":", state) == 42)
        #expect(integer("\"t\":", state) == 1_234_567_890_123, "the key in the last place")
        #expect(integer("\"offset\":", state) == -3)
        #expect(integer("\"type\":", state) == nil, "a string value is no integer")
        #expect(integer("\"missing\":", state) == nil)
        #expect(integer("\"seq\":", #"{"seq":7}"#) == 7, "the key at the first byte")
    }

    @Test func findsTheLastKeyFromTheEnd() {
        func last(_ key: StaticString, _ text: String) -> Int64? {
            Array(text.utf8).withUnsafeBytes { FastScan.lastInteger(after: key, in: $0) }
        }
        let state = #"{"type":"state","seq":42,"by":"ab","t":1234567890123,"doc":"cbf2"}"#
        #expect(last("\"t\":", state) == 1_234_567_890_123)
        #expect(last("\"seq\":", state) == 42)
        #expect(last("\"t\":", #"{"t":1,"x":{"t":2}}"#) == 2, "the last one")
        #expect(last("\"t\":", #"{"at":1}"#) == nil)
        #expect(last("\"t\":", #""t":"#) == nil, "key at the very end")
        #expect(last("\"t\":", #""t":7"#) == 7, "key at the first byte")
    }

    @Test func skipsLookalikes() {
        #expect(integer("\"seq\":", #"{"subseq":1,"seq":2}"#) == 2, "a key that ends like it")
        #expect(integer("\"seq\":", #"{"a":"x:y","seq":5}"#) == 5, "colons elsewhere")
        #expect(integer("\"t\":", #"{"at":1,"t" :2}"#) == nil, "only the exact spelling the server writes")
        #expect(integer("\"seq\":", #"{"seq":}"#) == nil, "no digits")
        #expect(integer("\"seq\":", #""seq":"#) == nil, "key at the very end")
    }

    /// Numbers a hostile server might send cannot overflow what the load tool does with
    /// them (`now - t`, seq gaps): past 15 digits they are not read (Int64.min once trapped).
    @Test func numbersPastFifteenDigitsAreNotRead() {
        #expect(integer("\"seq\":", #"{"seq":999999999999999}"#) == 999_999_999_999_999)
        #expect(integer("\"seq\":", #"{"seq":-999999999999999}"#) == -999_999_999_999_999)
        #expect(integer("\"seq\":", #"{"seq":1000000000000000}"#) == nil)
        #expect(integer("\"t\":", #"{"t":-9223372036854775808}"#) == nil)
        #expect(integer("\"t\":", #"{"t":99999999999999999999999}"#) == nil)
    }
}
