package tlasim;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

import tlc2.overrides.TLAPlusOperator;
import tlc2.value.impl.IntValue;
import tlc2.value.impl.StringValue;
import tlc2.value.impl.TupleValue;
import tlc2.value.impl.Value;

/**
 * One TLC run that checks a campaign's traces as they come, chunk after
 * chunk (the module tracing/tla/trace_module.py: trace_stream writes).
 *
 * Why: a TLC run per batch paid Java's start, SANY's parse and the JIT's
 * warm-up every time, more than half of what checking cost. Here one TLC,
 * warm, takes every chunk of the campaign.
 *
 * How. The module's behaviours start from a cursor state. Evaluating the
 * cursor's next step asks TlasimPoll whether chunk k is there: "ready" (its
 * traces start, and the cursor moves on to chunk k + 1), "wait" (not yet,
 * while TLC has other states to explore: the cursor polls again one level
 * later) or "end" (tlasim sent its last chunk). With nothing else to
 * explore, TlasimPoll blocks until tlasim sends a chunk or the end.
 * tlasim names a chunk on standard input ("k", or "end"), once its file
 * chunk-k.bin (tracing/tla/binary.py's format) is complete.
 *
 * Verdicts. TLC explores breadth first with one worker, so when it
 * evaluates the cursor at level L every state of a lower level has been
 * explored. TlasimPoll prints "tlasimStream at L" then, after flushing what
 * TLC printed before, and "tlasimStream loaded k L" when chunk k's traces
 * start from level L: a trace of n lines whose last state (level L + n)
 * did not print its end mark by then was rejected; and "tlasimStream idle"
 * when it has nothing left to explore but waits for a chunk: every trace
 * loaded before then that did not print its end mark was rejected. A chunk
 * no state can reach any more is dropped from memory.
 */
public final class TraceStream {
    private static final Object LOCK = new Object();
    private static int announced = -1; // the highest chunk tlasim named
    private static boolean ended = false;
    private static Thread listener = null;
    // Chunks loaded and not yet dropped, and the level each started from
    // and its longest trace, to know when no state can reach it.
    private static final Map<Integer, Value> CHUNKS = new HashMap<>();
    private static final Map<Integer, int[]> SPANS = new HashMap<>();
    // Each cursor state's answer (by chunk and poll), so that evaluating
    // its step twice never answers twice differently.
    private static final Map<Long, String> ANSWERS = new HashMap<>();

    private TraceStream() {
    }

    @TLAPlusOperator(identifier = "TlasimPoll", module = "TlasimIO", minLevel = 0)
    public static Value poll(final Value chunkValue, final Value pollValue, final Value levelValue,
            final Value queuedValue) {
        final int chunk = intOf(chunkValue, "chunk");
        final int poll = intOf(pollValue, "poll");
        final int level = intOf(levelValue, "level");
        final int queued = intOf(queuedValue, "queue");
        final long key = ((long) chunk << 32) | (poll & 0xffffffffL);
        synchronized (LOCK) {
            final String known = ANSWERS.get(key);
            if (known != null) {
                return new StringValue(known);
            }
            startListener();
            System.out.flush();
            System.out.println("tlasimStream at " + level);
            System.out.flush();
            drop(level);
            String answer;
            boolean idle = false;
            while (true) {
                if (chunk <= announced) {
                    load(chunk, level);
                    answer = "ready";
                    break;
                }
                if (ended) {
                    answer = "end";
                    break;
                }
                if (queued > 0) {
                    answer = "wait";
                    break;
                }
                if (!idle) {
                    // Nothing is left to explore: every trace loaded so far
                    // printed its end mark, or never will.
                    System.out.println("tlasimStream idle");
                    System.out.flush();
                    idle = true;
                }
                try {
                    LOCK.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    TraceData.fail("interrupted while waiting for chunk " + chunk);
                }
            }
            ANSWERS.put(key, answer);
            return new StringValue(answer);
        }
    }

    @TLAPlusOperator(identifier = "TlasimChunk", module = "TlasimIO", minLevel = 0)
    public static Value chunk(final Value chunkValue) {
        final int chunk = intOf(chunkValue, "chunk");
        synchronized (LOCK) {
            final Value traces = CHUNKS.get(chunk);
            if (traces == null) {
                TraceData.fail("chunk " + chunk + " is not loaded (or was dropped while in use)");
            }
            return traces;
        }
    }

    private static int intOf(final Value v, final String what) {
        if (!(v instanceof IntValue)) {
            TraceData.fail("TlasimPoll: the " + what + " must be an integer, not " + v);
        }
        return ((IntValue) v).val;
    }

    private static void load(final int chunk, final int level) {
        if (CHUNKS.containsKey(chunk)) {
            return;
        }
        final File path = new File(System.getProperty("user.dir"), "chunk-" + chunk + ".bin");
        final Value traces = TraceData.read(path);
        int longest = 0;
        for (final Value trace : ((TupleValue) traces).elems) {
            longest = Math.max(longest, ((TupleValue) trace).size());
        }
        CHUNKS.put(chunk, traces);
        SPANS.put(chunk, new int[] { level, longest });
        System.out.println("tlasimStream loaded " + chunk + " " + level);
        System.out.flush();
        // The file is read; it would only fill the disk.
        path.delete();
    }

    /** Forget the chunks whose every state is at a level below `level`. */
    private static void drop(final int level) {
        final Iterator<Map.Entry<Integer, int[]>> spans = SPANS.entrySet().iterator();
        while (spans.hasNext()) {
            final Map.Entry<Integer, int[]> span = spans.next();
            // A trace's states are at levels start + 1 .. start + its length.
            if (span.getValue()[0] + span.getValue()[1] < level) {
                CHUNKS.remove(span.getKey());
                spans.remove();
            }
        }
    }

    /** Reads tlasim's announcements from standard input, on a thread of its own. */
    private static void startListener() {
        if (listener != null) {
            return;
        }
        listener = new Thread(() -> {
            final BufferedReader in = new BufferedReader(
                    new InputStreamReader(System.in, StandardCharsets.US_ASCII));
            try {
                String line;
                while ((line = in.readLine()) != null) {
                    line = line.trim();
                    synchronized (LOCK) {
                        if (line.equals("end")) {
                            ended = true;
                        } else {
                            final int chunk;
                            try {
                                chunk = Integer.parseInt(line);
                            } catch (NumberFormatException e) {
                                TraceData.fail("unexpected line on standard input: " + line);
                                return;
                            }
                            if (chunk != announced + 1) {
                                TraceData.fail("chunk " + chunk + " announced after chunk " + announced);
                            }
                            announced = chunk;
                        }
                        LOCK.notifyAll();
                    }
                    if (line.equals("end")) {
                        return;
                    }
                }
                // tlasim went away without saying the end: nothing more will come.
                synchronized (LOCK) {
                    ended = true;
                    LOCK.notifyAll();
                }
            } catch (IOException e) {
                TraceData.fail("cannot read standard input: " + e.getMessage());
            }
        }, "tlasim-stream-listener");
        listener.setDaemon(true);
        listener.start();
    }
}
