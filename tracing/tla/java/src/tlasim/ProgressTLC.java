package tlasim;

import tlc2.TLCGlobals;
import tlc2.tool.AbstractChecker;
import tlc2.tool.ModelChecker;

/**
 * TLC, with its search figures on standard error every few seconds.
 *
 * Why: TLC 2.15 prints its Progress report once a minute, and the interval
 * is a compile-time constant (TLCGlobals.progressInterval is static final),
 * so a user sizing a model waits a minute for the first number. The figures
 * are there all along: the model checker keeps them for its JMX bean, which
 * reads them from another thread while the workers run. This class reads
 * the same getters.
 *
 * Each line is "@tlasim-progress ELAPSED_MS GENERATED DISTINCT QUEUE DEPTH",
 * printed with one println so that it never splits. It goes to standard
 * error, apart from TLC's -tool messages on standard output, which are
 * parsed as before. The interval is the system property
 * tlasim.progress.ms (default 1000). Lines start once TLC has made its model
 * checker (after parsing and the initial states); a simulation run or a run
 * that fails before then prints none.
 */
public final class ProgressTLC {
    private ProgressTLC() {
    }

    public static void main(String[] args) throws Exception {
        final long intervalMs = Long.getLong("tlasim.progress.ms", 1000L);
        final long started = System.currentTimeMillis();
        Thread reporter = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(intervalMs);
                } catch (InterruptedException stopped) {
                    return;
                }
                AbstractChecker checker = TLCGlobals.mainChecker;
                if (checker instanceof ModelChecker) {
                    ModelChecker mc = (ModelChecker) checker;
                    long elapsed = System.currentTimeMillis() - started;
                    System.err.println("@tlasim-progress " + elapsed + " " + mc.getStatesGenerated()
                            + " " + mc.getDistinctStatesGenerated() + " " + mc.getStateQueueSize()
                            + " " + mc.getProgress());
                }
            }
        }, "tlasim-progress");
        // A daemon: TLC's own end (System.exit, or main returning) ends it too.
        reporter.setDaemon(true);
        reporter.start();
        tlc2.TLC.main(args);
    }
}
