/// The languages `CodeHighlighter` knows, one table each, by canonical name.
extension CodeLanguage {
    static let tables: [String: CodeLanguage] = {
        var all = [CodeLanguage]()
        let cComments = (open: Array("/*".unicodeScalars), close: Array("*/".unicodeScalars))
        let slashes = [Array("//".unicodeScalars)]

        var swift = CodeLanguage(name: "swift")
        swift.keywords = words("""
            actor any as associatedtype async await borrowing break case catch class consume consuming continue default defer deinit \
            didSet do else enum extension fallthrough false fileprivate final for func get guard if import in indirect init inout \
            internal is lazy let mutating nil nonisolated nonmutating open operator override package private protocol public \
            repeat required rethrows return self Self set some static struct subscript super switch throw throws true try \
            typealias unowned var weak where while willSet
            """)
        swift.lineComments = slashes
        swift.blockComment = cComments
        swift.commentsNest = true
        swift.quotes = [Quote("\"\"\"", multiline: true), Quote("\"")]
        swift.attributes = true
        all.append(swift)

        var python = CodeLanguage(name: "python")
        python.keywords = words("""
            and as assert async await break case class continue def del elif else except False finally for from global if import \
            in is lambda match None nonlocal not or pass raise return self True try while with yield
            """)
        python.types = words("bool bytearray bytes complex dict float frozenset int list object set str tuple type")
        python.lineComments = [["#"]]
        python.quotes = [Quote("\"\"\"", multiline: true), Quote("'''", multiline: true), Quote("\""), Quote("'")]
        python.attributes = true
        all.append(python)

        var javascript = CodeLanguage(name: "javascript")
        javascript.keywords = words("""
            async await break case catch class const continue debugger default delete do else export extends false finally for \
            from function get if import in instanceof let new null of return set static super switch this throw true try typeof \
            undefined var void while with yield
            """)
        javascript.lineComments = slashes
        javascript.blockComment = cComments
        javascript.quotes = [Quote("`", multiline: true), Quote("\""), Quote("'")]
        javascript.wordCharacters = ["$"]
        all.append(javascript)

        var typescript = javascript
        typescript.name = "typescript"
        typescript.keywords.formUnion(words("""
            abstract as asserts declare enum implements infer interface is keyof module namespace override private protected \
            public readonly satisfies type unique
            """))
        typescript.types = words("any bigint boolean never number object string symbol unknown void")
        typescript.attributes = true
        all.append(typescript)

        var go = CodeLanguage(name: "go")
        go.keywords = words("""
            break case chan const continue default defer else fallthrough false for func go goto if import interface iota map nil \
            package range return select struct switch true type var
            """)
        go.types = words("""
            any bool byte comparable complex128 complex64 error float32 float64 int int16 int32 int64 int8 rune string uint uint16 \
            uint32 uint64 uint8 uintptr
            """)
        go.capitalisedTypes = false  // a capital means exported in Go, not a type
        go.lineComments = slashes
        go.blockComment = cComments
        go.quotes = [Quote("`", escapes: false, multiline: true), Quote("\"")]
        go.characterLiterals = true
        all.append(go)

        var rust = CodeLanguage(name: "rust")
        rust.keywords = words("""
            as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod move mut pub \
            ref return self Self static struct super trait true type unsafe use where while
            """)
        rust.types = words("bool char f32 f64 i128 i16 i32 i64 i8 isize str u128 u16 u32 u64 u8 usize")
        rust.lineComments = slashes
        rust.blockComment = cComments
        rust.commentsNest = true
        rust.quotes = [Quote("\"", multiline: true)]
        rust.characterLiterals = true
        all.append(rust)

        var c = CodeLanguage(name: "c")
        c.keywords = words("""
            auto break case const continue default do else enum extern for goto if inline register restrict return sizeof static \
            struct switch typedef union volatile while NULL true false
            """)
        c.types = words("""
            bool char double float int long short signed unsigned void size_t ssize_t int8_t int16_t int32_t int64_t uint8_t \
            uint16_t uint32_t uint64_t FILE
            """)
        c.lineComments = slashes
        c.blockComment = cComments
        c.quotes = [Quote("\"")]
        c.characterLiterals = true
        c.directives = true
        all.append(c)

        var cpp = c
        cpp.name = "cpp"
        cpp.keywords.formUnion(words("""
            alignas alignof catch class co_await co_return co_yield concept consteval constexpr constinit const_cast decltype delete \
            dynamic_cast explicit export friend mutable namespace new noexcept nullptr operator override private protected public \
            reinterpret_cast requires static_assert static_cast template this throw try typeid typename using virtual final
            """))
        cpp.types.formUnion(words("auto char8_t char16_t char32_t wchar_t string vector map unique_ptr shared_ptr"))
        all.append(cpp)

        var java = CodeLanguage(name: "java")
        java.keywords = words("""
            abstract assert break case catch class const continue default do else enum extends false final finally for goto if \
            implements import instanceof interface native new null package permits private protected public record return sealed \
            static strictfp super switch synchronized this throw throws transient true try var void volatile while yield
            """)
        java.types = words("boolean byte char double float int long short")
        java.lineComments = slashes
        java.blockComment = cComments
        java.quotes = [Quote("\"\"\"", multiline: true), Quote("\"")]
        java.characterLiterals = true
        java.attributes = true
        all.append(java)

        var kotlin = java
        kotlin.name = "kotlin"
        kotlin.keywords = words("""
            abstract actual annotation as break by catch class companion const constructor continue crossinline data do else enum \
            expect external false final finally for fun get if import in infix init inline inner interface internal is lateinit \
            noinline null object open operator out override package private protected public reified return sealed set super \
            suspend tailrec this throw true try typealias val var vararg when where while
            """)
        kotlin.types = []
        kotlin.commentsNest = true
        kotlin.quotes = [Quote("\"\"\"", escapes: false, multiline: true), Quote("\"")]
        all.append(kotlin)

        var shell = CodeLanguage(name: "shell")
        shell.keywords = words("""
            case do done elif else esac export fi for function if in local readonly return select then time until while \
            alias break cd continue echo eval exec exit set shift source trap unset
            """)
        shell.capitalisedTypes = false
        shell.lineComments = [["#"]]
        shell.commentsAfterSpace = true
        shell.quotes = [Quote("\"", multiline: true), Quote("'", escapes: false, multiline: true)]
        shell.wordCharacters = ["-", "."]  // `--in`, `apt-get`, `file.done` are not keywords
        shell.variables = true
        all.append(shell)

        var sql = CodeLanguage(name: "sql")
        sql.keywords = words("""
            add all alter and any as asc begin between by case check column commit constraint create cross database default delete \
            desc distinct drop else end exists false foreign from full group having if in index inner insert intersect into is join \
            key left like limit not null offset on or order outer primary references returning right rollback select set table then \
            transaction true truncate union unique update using values view when where with
            """)
        sql.types = words("""
            bigint binary blob boolean char date datetime decimal double float int integer interval json jsonb numeric real \
            serial smallint text time timestamp timestamptz uuid varchar
            """)
        sql.capitalisedTypes = false
        sql.caseInsensitive = true
        sql.lineComments = [Array("--".unicodeScalars)]
        sql.blockComment = cComments
        sql.quotes = [Quote("'", escapes: false), Quote("\"", escapes: false)]
        all.append(sql)

        var json = CodeLanguage(name: "json")
        json.keywords = words("true false null")
        json.capitalisedTypes = false
        json.quotes = [Quote("\"")]
        json.keys = .json
        all.append(json)

        var yaml = CodeLanguage(name: "yaml")
        yaml.keywords = words("true false null yes no on off True False Null TRUE FALSE NULL")
        yaml.capitalisedTypes = false
        yaml.lineComments = [["#"]]
        yaml.commentsAfterSpace = true
        yaml.quotes = [Quote("\""), Quote("'", escapes: false)]
        yaml.quotesAfterSpace = true
        yaml.keys = .yaml
        yaml.wordCharacters = ["-", "."]
        all.append(yaml)

        var diff = CodeLanguage(name: "diff")
        diff.isDiff = true
        all.append(diff)

        return Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
    }()
}
