package tlasim;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.HashMap;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

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
 * One trace that tlasim recorded while the simulator ran, as Python's pickle
 * of the list of its lines, each the tuple (action, params, vars)
 * (tracing/tla/pickled.py writes it).
 *
 * Why: Python's C pickler encodes a run's values five times faster than
 * tlasim's own encoder written in Python could, and its memo names each
 * object met again (a message in flight, a variable the step left alone).
 *
 * Only the opcodes the C pickler writes for tlasim's values (protocol 4 or
 * 5) are read, and the values built follow tracing.values.freeze as the
 * other encoder does: a dict whose keys are all field names is a record,
 * another dict a function, an empty one the empty tuple; a list or tuple a
 * tuple; a set a set. A str or int of a subclass, a Record or another
 * mapping, comes as builtins.X (str, int, dict) applied to the plain
 * value. What a trace's values may not hold (an integer outside 32 bits,
 * a string outside printable ASCII, a value nested more than
 * MAX_VALUE_DEPTH deep, None, a float, any other opcode) makes the trace a
 * refused one: a single line whose action no trace may start with, so TLC
 * rejects it and tlasim checks that run from its log, where the same value
 * gets its error message. The bytes of such a trace are skipped, never
 * guessed at.
 */
final class PickledTrace {
    // tracing.values.MAX_DEPTH: containers nested in one variable's value.
    static final int MAX_VALUE_DEPTH = 100;
    static final String REFUSED_ACTION = "tlasim: a value TLC cannot hold";

    // tracing.tla.literal: a record field is an identifier that is no
    // reserved word (a key that is one makes a function, as there).
    private static final Pattern IDENT = Pattern.compile("[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*");
    private static final Set<String> RESERVED = new HashSet<>(Arrays.asList((
            "ACTION ASSUME ASSUMPTION AXIOM BOOLEAN BY CASE CHOOSE CONSTANT CONSTANTS COROLLARY "
            + "DEF DEFINE DEFS DOMAIN ELSE ENABLED EXCEPT EXTENDS FALSE HAVE HIDE IF IN INSTANCE "
            + "LAMBDA LEMMA LET LOCAL MODULE NEW OBVIOUS OMITTED ONLY OTHER PICK PROOF PROPOSITION "
            + "PROVE QED RECURSIVE STATE STRING SUBSET SUFFICES TAKE TEMPORAL THEN THEOREM TRUE "
            + "UNCHANGED UNION USE VARIABLE VARIABLES WITH WITNESS").split(" ")));
    private static final Set<String> BUILTINS = new HashSet<>(
            Arrays.asList("str", "int", "dict"));
    private static final UniqueString[] LINE_FIELDS = {
        UniqueString.uniqueStringOf("action"),
        UniqueString.uniqueStringOf("params"),
        UniqueString.uniqueStringOf("vars"),
    };

    /** A value nobody may use: why the trace is refused. */
    static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        Refused(final String why) {
            super(why, null, false, false);
        }
    }

    // What the pickle's opcodes build, before they become TLC values: a
    // container's parts, and once made, its value and height (how many
    // containers nest in it, itself included). Strings, integers and
    // booleans are TLC values on the stack already.
    private abstract static class Py {
        Value made;
        int height = -1;

        abstract List<Object> parts();
    }

    private static final class PyList extends Py {
        final ArrayList<Object> items = new ArrayList<>();

        List<Object> parts() {
            return items;
        }
    }

    private static final class PyTuple extends Py {
        final List<Object> items;

        PyTuple(final Object... items) {
            this.items = Arrays.asList(items);
        }

        List<Object> parts() {
            return items;
        }
    }

    private static final class PyDict extends Py {
        final ArrayList<Object> keys = new ArrayList<>();
        final ArrayList<Object> values = new ArrayList<>();

        List<Object> parts() {
            final List<Object> all = new ArrayList<>(keys);
            all.addAll(values);
            return all;
        }
    }

    private static final class PySet extends Py {
        final ArrayList<Object> items = new ArrayList<>();

        List<Object> parts() {
            return items;
        }
    }

    private static final class Global {
        final String name;

        Global(final String module, final String name) {
            this.name = "builtins".equals(module) && BUILTINS.contains(name) ? name : null;
        }
    }

    private static final Object NOT_A_VALUE = new Object(); // None, a float, a long integer

    private final ByteBuffer in;
    private final ArrayList<Object> stack = new ArrayList<>();
    private final ArrayList<Integer> marks = new ArrayList<>();
    private final ArrayList<Object> memo = new ArrayList<>();
    // Whether a string is a record field name, decided once per string.
    private final HashMap<String, Boolean> fieldNames = new HashMap<>();

    private PickledTrace(final byte[] bytes, final int offset, final int length) {
        this.in = ByteBuffer.wrap(bytes, offset, length).slice().order(ByteOrder.LITTLE_ENDIAN);
    }

    /** The trace in bytes[offset, offset + length): the tuple of its lines. */
    static Value read(final byte[] bytes, final int offset, final int length) {
        try {
            return new PickledTrace(bytes, offset, length).trace();
        } catch (Refused | RuntimeException e) {
            // RuntimeException: bytes that end early, a wrong count; the
            // writer is tlasim's own, so the run's log will tell.
            return refused();
        }
    }

    static Value refused() {
        final Value line = new RecordValue(LINE_FIELDS.clone(), new Value[] {
            new StringValue(REFUSED_ACTION), new TupleValue(new Value[0]), new TupleValue(new Value[0]),
        }, false).normalize();
        return new TupleValue(new Value[] {line});
    }

    private Value trace() throws Refused {
        final Object top = load();
        if (!(top instanceof PyList)) {
            throw new Refused("the pickle is not a list of lines");
        }
        final List<Object> lines = ((PyList) top).items;
        final Value[] out = new Value[lines.size()];
        for (int i = 0; i < out.length; i++) {
            final Object line = lines.get(i);
            if (!(line instanceof PyTuple) || ((PyTuple) line).items.size() != 3
                    || !(((PyTuple) line).items.get(0) instanceof StringValue)) {
                throw new Refused("a line is not (action, params, vars)");
            }
            final Object[] parts = ((PyTuple) line).items.toArray();
            // As the other encoder counts: the params with their
            // containers, and each variable's value, nest at most
            // MAX_VALUE_DEPTH containers deep.
            if (height(parts[1]) > MAX_VALUE_DEPTH || !(parts[2] instanceof PyDict)) {
                throw new Refused("params nested too deep, or vars no dict");
            }
            for (final Object v : ((PyDict) parts[2]).values) {
                if (height(v) > MAX_VALUE_DEPTH) {
                    throw new Refused("a variable's value nested too deep");
                }
            }
            final Value[] fields = {(Value) parts[0], value(parts[1]), lineVars((PyDict) parts[2])};
            // Its own names: normalizing sorts them in place, by TLC's order.
            out[i] = new RecordValue(LINE_FIELDS.clone(), fields, false).normalize();
        }
        return new TupleValue(out);
    }

    // The last line's variables, in its dict's order, and their values.
    private List<Object> lastNames = null;
    private Value[] lastValues = null;

    /**
     * A line's vars. A core builds its view afresh at each step, so most
     * variables come as new objects equal to the last line's; each such
     * value is made the last line's own object, as the other encoder names
     * it. TLC checks a state whose values are the same objects as its
     * predecessor's faster (4 of 38 us a twopc line).
     */
    private Value lineVars(final PyDict vars) throws Refused {
        final int n = vars.keys.size();
        if (n == 0 || !allFields(vars.keys)) {
            return value(vars);
        }
        final boolean sameNames = vars.keys.equals(lastNames);
        final Value[] vs = new Value[n];
        final UniqueString[] names = new UniqueString[n];
        for (int i = 0; i < n; i++) {
            final Object part = vars.values.get(i);
            Value v = value(part);
            if (sameNames && v != lastValues[i] && same(v, lastValues[i])) {
                v = lastValues[i];
                if (part instanceof Py) {
                    ((Py) part).made = v; // the object met again is this value
                }
            }
            vs[i] = v;
            names[i] = ((StringValue) vars.keys.get(i)).getVal();
        }
        lastNames = vars.keys;
        lastValues = vs.clone();
        return new RecordValue(names, vs, false).normalize();
    }

    /** TLA+ equality; values TLC cannot compare are not the same. */
    private static boolean same(final Value a, final Value b) {
        try {
            return a.equals(b);
        } catch (RuntimeException e) {
            return false;
        }
    }

    // ---- the pickle machine ----

    private Object top() {
        return stack.get(stack.size() - 1);
    }

    private Object pop() {
        return stack.remove(stack.size() - 1);
    }

    private Object[] popMark() throws Refused {
        if (marks.isEmpty()) {
            throw new Refused("no mark");
        }
        final int at = marks.remove(marks.size() - 1);
        final int n = stack.size() - at;
        final Object[] items = new Object[n];
        for (int i = n - 1; i >= 0; i--) {
            items[i] = pop();
        }
        return items;
    }

    /** A string, as TLC's value: one TLA+ strings cannot hold refuses the trace. */
    private StringValue text(final int n) throws Refused {
        final String s = new String(in.array(), in.arrayOffset() + in.position(), n, StandardCharsets.UTF_8);
        in.position(in.position() + n);
        for (int i = 0; i < s.length(); i++) {
            final char c = s.charAt(i);
            if (!(c >= 0x20 && c < 0x7f && c != '`') && c != '\n' && c != '\t' && c != '\r'
                    && c != '\f') {
                throw new Refused("a string TLA+ cannot hold");
            }
        }
        return new StringValue(s);
    }

    private Object load() throws Refused {
        while (true) {
            final int op = in.get() & 0xff;
            switch (op) {
            case 0x80: // PROTO
                in.get();
                break;
            case 0x95: // FRAME
                in.getLong();
                break;
            case '.': // STOP
                if (stack.size() != 1) {
                    throw new Refused("the stack holds " + stack.size() + " values at the end");
                }
                return stack.get(0);
            case '(':
                marks.add(stack.size());
                break;
            case ']':
                stack.add(new PyList());
                break;
            case 'a': {
                final Object x = pop();
                list(top()).items.add(x);
                break;
            }
            case 'e': {
                final Object[] items = popMark();
                list(top()).items.addAll(Arrays.asList(items));
                break;
            }
            case ')':
                stack.add(new PyTuple());
                break;
            case 0x85:
                stack.add(new PyTuple(pop()));
                break;
            case 0x86: {
                final Object b = pop();
                stack.add(new PyTuple(pop(), b));
                break;
            }
            case 0x87: {
                final Object c = pop();
                final Object b = pop();
                stack.add(new PyTuple(pop(), b, c));
                break;
            }
            case 't':
                stack.add(new PyTuple(popMark()));
                break;
            case '}':
                stack.add(new PyDict());
                break;
            case 's': {
                final Object v = pop();
                final Object k = pop();
                final PyDict d = dict(top());
                d.keys.add(k);
                d.values.add(v);
                break;
            }
            case 'u': {
                final Object[] items = popMark();
                final PyDict d = dict(top());
                for (int i = 0; i + 1 < items.length; i += 2) {
                    d.keys.add(items[i]);
                    d.values.add(items[i + 1]);
                }
                break;
            }
            case 0x8f: // EMPTY_SET
                stack.add(new PySet());
                break;
            case 0x90: { // ADDITEMS
                set(top()).items.addAll(Arrays.asList(popMark()));
                break;
            }
            case 0x91: { // FROZENSET
                final PySet s = new PySet();
                s.items.addAll(Arrays.asList(popMark()));
                stack.add(s);
                break;
            }
            case 0x8c: // SHORT_BINUNICODE
                stack.add(text(in.get() & 0xff));
                break;
            case 'X':
                stack.add(text(in.getInt()));
                break;
            case 'J':
                stack.add(IntValue.gen(in.getInt()));
                break;
            case 'K':
                stack.add(IntValue.gen(in.get() & 0xff));
                break;
            case 'M':
                stack.add(IntValue.gen(in.getShort() & 0xffff));
                break;
            case 0x8a: // LONG1: the C pickler's form only for ints outside 32 bits
                in.position(in.position() + (in.get() & 0xff));
                stack.add(NOT_A_VALUE);
                break;
            case 'N':
                stack.add(NOT_A_VALUE);
                break;
            case 'G': // BINFLOAT
                in.getDouble();
                stack.add(NOT_A_VALUE);
                break;
            case 0x88:
                stack.add(BoolValue.ValTrue);
                break;
            case 0x89:
                stack.add(BoolValue.ValFalse);
                break;
            case 0x94: // MEMOIZE
                memo.add(top());
                break;
            case 'h':
                stack.add(memo.get(in.get() & 0xff));
                break;
            case 'j':
                stack.add(memo.get(in.getInt()));
                break;
            case 0x93: { // STACK_GLOBAL
                final Object name = pop();
                final Object module = pop();
                if (!(name instanceof StringValue) || !(module instanceof StringValue)) {
                    throw new Refused("a global's name is no string");
                }
                stack.add(new Global(((StringValue) module).getVal().toString(),
                        ((StringValue) name).getVal().toString()));
                break;
            }
            case 'R': { // REDUCE: builtins.X(plain), which is the plain value
                final Object args = pop();
                final Object callable = pop();
                if (!(callable instanceof Global) || ((Global) callable).name == null
                        || !(args instanceof PyTuple) || ((PyTuple) args).items.size() != 1) {
                    throw new Refused("a call of something other than a builtin conversion");
                }
                stack.add(((PyTuple) args).items.get(0));
                break;
            }
            default:
                throw new Refused("opcode " + op);
            }
        }
    }

    private static PyList list(final Object o) throws Refused {
        if (!(o instanceof PyList)) {
            throw new Refused("append to no list");
        }
        return (PyList) o;
    }

    private static PyDict dict(final Object o) throws Refused {
        if (!(o instanceof PyDict)) {
            throw new Refused("set an item of no dict");
        }
        return (PyDict) o;
    }

    private static PySet set(final Object o) throws Refused {
        if (!(o instanceof PySet)) {
            throw new Refused("add to no set");
        }
        return (PySet) o;
    }

    // ---- TLC values ----

    /** The height of o: how many containers nest in it, o included. */
    private static int height(final Object o) {
        if (!(o instanceof Py)) {
            return 0;
        }
        final Py py = (Py) o;
        if (py.height < 0) {
            int below = 0;
            for (final Object part : py.parts()) {
                below = Math.max(below, height(part));
            }
            py.height = below + 1;
        }
        return py.height;
    }

    private Value value(final Object o) throws Refused {
        if (o instanceof Value) {
            return (Value) o;
        }
        if (!(o instanceof Py)) {
            throw new Refused("no TLA+ value");
        }
        final Py py = (Py) o;
        if (py.made == null) {
            py.made = make(py);
        }
        return py.made;
    }

    private Value[] values(final List<Object> items) throws Refused {
        final Value[] out = new Value[items.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = value(items.get(i));
        }
        return out;
    }

    private Value make(final Py o) throws Refused {
        if (o instanceof PyList) {
            return new TupleValue(values(((PyList) o).items));
        }
        if (o instanceof PyTuple) {
            return new TupleValue(values(((PyTuple) o).items));
        }
        if (o instanceof PySet) {
            return new SetEnumValue(values(((PySet) o).items), false).normalize();
        }
        final PyDict d = (PyDict) o;
        final int n = d.keys.size();
        if (n == 0) {
            // TLC equates <<>> with every function on the empty domain.
            return new TupleValue(new Value[0]);
        }
        final Value[] vs = values(d.values);
        if (allFields(d.keys)) {
            final UniqueString[] names = new UniqueString[n];
            for (int i = 0; i < n; i++) {
                names[i] = ((StringValue) d.keys.get(i)).getVal();
            }
            return new RecordValue(names, vs, false).normalize();
        }
        return new FcnRcdValue(values(d.keys), vs, false).normalize();
    }

    /** Whether every key is a string that may be a record field. */
    private boolean allFields(final List<Object> keys) {
        for (final Object k : keys) {
            if (!isField(k)) {
                return false;
            }
        }
        return true;
    }

    /** Whether the key k is a string that may be a record field. */
    private boolean isField(final Object k) {
        if (!(k instanceof StringValue)) {
            return false;
        }
        final String key = ((StringValue) k).getVal().toString();
        Boolean known = fieldNames.get(key);
        if (known == null) {
            known = isFieldName(key);
            fieldNames.put(key, known);
        }
        return known;
    }

    static boolean isFieldName(final String key) {
        return IDENT.matcher(key).matches() && !RESERVED.contains(key)
                && !key.startsWith("WF_") && !key.startsWith("SF_");
    }
}
