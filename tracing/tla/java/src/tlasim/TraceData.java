package tlasim;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import tlc2.overrides.TLAPlusOperator;
import tlc2.value.impl.BoolValue;
import tlc2.value.impl.FcnRcdValue;
import tlc2.value.impl.IntValue;
import tlc2.value.impl.RecordValue;
import tlc2.value.impl.SetEnumValue;
import tlc2.value.impl.StringValue;
import tlc2.value.impl.TupleValue;
import tlc2.value.impl.Value;
import util.UniqueString;

/**
 * TlasimIO!TlasimLoad(name): the value tlasim wrote to the file `name`.
 *
 * Why: a batch's traces used to be TLA+ text, and SANY's parse of that text
 * was most of what checking a trace cost. Read here, the traces never pass
 * through SANY; TLC evaluates the definition that calls this once, before
 * its search, as it did the text.
 *
 * The values built are the ones TLC builds when it evaluates the literal
 * text tlasim wrote before (tracing/tla/trace_module.py): a record for
 * [a |-> ..], a function for (k :> v) @@ .., a tuple for <<..>>, a set for
 * {..}, each normalized as TLC normalizes them, so every comparison and
 * fingerprint is TLC's own.
 *
 * The format (tracing/tla/binary.py writes it; all integers
 * big-endian): the magic bytes "TLSM", a version byte, then one value. A
 * value is a tag byte and its payload:
 *   'F' FALSE, 'T' TRUE, 'I' int32, 'S' string (u32 length, UTF-8 bytes),
 *   'Q' tuple (u32 count, values), 'E' set (u32 count, values),
 *   'R' record (u32 count, then per field: its name as a string payload, its value),
 *   'M' function (u32 count, then per pair: key value, value),
 *   'D' a value that later 'P' tags refer to (kept in order of appearance),
 *   'P' u32: the index of an earlier 'D' value.
 * The file's value is a tuple (the traces), and each of its elements numbers
 * its 'D' values from 0, so each trace's bytes stand alone. An element may
 * instead be 'K' (u32 length, then a pickle of the trace's lines: see
 * PickledTrace), which only the tuple of traces holds.
 * Anything else is an error naming the offset, never a guess.
 */
public final class TraceData {
    static final byte[] MAGIC = { 'T', 'L', 'S', 'M' };
    static final int VERSION = 3;
    // Nesting the writer never exceeds (tracing.values.MAX_DEPTH, plus the
    // levels of the trace, line and record that hold a value).
    static final int MAX_DEPTH = 110;
    // The exit status of a TLC that could not read its trace data. Not an
    // evaluation error, which would give the batch's traces verdicts: the
    // batch could not be checked at all, which only an exit status (not any
    // text a trace could hold) tells tlasim.
    public static final int LOAD_FAILED = 97;

    private TraceData() {
    }

    @TLAPlusOperator(identifier = "TlasimLoad", module = "TlasimIO", minLevel = 0)
    public static Value load(final Value name) {
        if (!(name instanceof StringValue)) {
            fail("TlasimLoad: the argument must be a file name (a string), not " + name);
        }
        final String file = ((StringValue) name).getVal().toString();
        File path = new File(file);
        if (!path.isAbsolute()) {
            // TLC runs in the folder of the module it checks; user.dir is that folder.
            path = new File(System.getProperty("user.dir"), file);
        }
        return read(path);
    }

    /** The traces in the file `path`; a file that cannot be read stops TLC (LOAD_FAILED). */
    static Value read(final File path) {
        try {
            final Reader reader = new Reader(Files.readAllBytes(path.toPath()));
            reader.header();
            final Value value = reader.traces();
            reader.atEnd();
            return value;
        } catch (IOException e) {
            fail("cannot read " + path + ": " + e.getMessage());
            return null; // not reached
        }
    }

    static void fail(final String message) {
        System.err.println("tlasim: " + message);
        System.err.flush();
        // halt, not exit: no shutdown hook may print TLC's own report after this.
        Runtime.getRuntime().halt(LOAD_FAILED);
    }

    /** Reads one file's bytes, read whole: a buffer beats a stream per value. */
    static final class Reader {
        private final ByteBuffer in;
        private final List<Value> shared = new ArrayList<>();

        Reader(final byte[] bytes) {
            this.in = ByteBuffer.wrap(bytes); // big-endian, as written
        }

        IOException error(final String what) {
            return new IOException("malformed trace data at byte " + in.position() + ": " + what);
        }

        void atEnd() throws IOException {
            if (in.hasRemaining()) {
                throw error("bytes after the value");
            }
        }

        private int u8() throws IOException {
            if (!in.hasRemaining()) {
                throw error("unexpected end of file");
            }
            return in.get() & 0xff;
        }

        private int i32() throws IOException {
            if (in.remaining() < 4) {
                throw error("unexpected end of file");
            }
            return in.getInt();
        }

        private int count() throws IOException {
            final int n = i32();
            if (n < 0) {
                throw error("negative count " + n);
            }
            return n;
        }

        private String string() throws IOException {
            final int n = count();
            if (in.remaining() < n) {
                throw error("unexpected end of file in a string");
            }
            final String s = new String(in.array(), in.position(), n, StandardCharsets.UTF_8);
            in.position(in.position() + n);
            return s;
        }

        void header() throws IOException {
            for (final byte b : MAGIC) {
                if (u8() != b) {
                    throw error("not a tlasim trace data file");
                }
            }
            final int version = u8();
            if (version != VERSION) {
                throw error("format version " + version + ", expected " + VERSION);
            }
        }

        Value traces() throws IOException {
            if (u8() != 'Q') {
                throw error("the file's value must be a tuple of traces");
            }
            final Value[] traces = new Value[count()];
            for (int i = 0; i < traces.length; i++) {
                shared.clear();
                if (in.hasRemaining() && in.get(in.position()) == 'K') {
                    in.get();
                    final int n = count();
                    if (in.remaining() < n) {
                        throw error("unexpected end of file in a pickled trace");
                    }
                    traces[i] = PickledTrace.read(in.array(), in.position(), n);
                    in.position(in.position() + n);
                } else {
                    traces[i] = value(1);
                }
            }
            return new TupleValue(traces);
        }

        Value value(final int depth) throws IOException {
            if (depth > MAX_DEPTH) {
                throw error("nested deeper than " + MAX_DEPTH + " levels");
            }
            final int tag = u8();
            switch (tag) {
            case 'F':
                return BoolValue.ValFalse;
            case 'T':
                return BoolValue.ValTrue;
            case 'I':
                return IntValue.gen(i32());
            case 'S':
                return new StringValue(string());
            case 'Q': {
                final Value[] elems = values(count(), depth);
                return new TupleValue(elems);
            }
            case 'E': {
                final Value[] elems = values(count(), depth);
                return new SetEnumValue(elems, false).normalize();
            }
            case 'R': {
                final int n = count();
                final UniqueString[] names = new UniqueString[n];
                final Value[] values = new Value[n];
                for (int i = 0; i < n; i++) {
                    names[i] = UniqueString.uniqueStringOf(string());
                    values[i] = value(depth + 1);
                }
                return new RecordValue(names, values, false).normalize();
            }
            case 'M': {
                final int n = count();
                final Value[] keys = new Value[n];
                final Value[] values = new Value[n];
                for (int i = 0; i < n; i++) {
                    keys[i] = value(depth + 1);
                    values[i] = value(depth + 1);
                }
                return new FcnRcdValue(keys, values, false).normalize();
            }
            case 'D': {
                final int slot = shared.size();
                shared.add(null); // reserved, so nested definitions number after it
                final Value v = value(depth);
                shared.set(slot, v);
                return v;
            }
            case 'P': {
                final int index = count();
                if (index >= shared.size() || shared.get(index) == null) {
                    throw error("reference to value " + index + ", which is not defined before it");
                }
                return shared.get(index);
            }
            default:
                throw error("unknown tag " + tag);
            }
        }

        private Value[] values(final int n, final int depth) throws IOException {
            final Value[] out = new Value[n];
            for (int i = 0; i < n; i++) {
                out[i] = value(depth + 1);
            }
            return out;
        }
    }
}
