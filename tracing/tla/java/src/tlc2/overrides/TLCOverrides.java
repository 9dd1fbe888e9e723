package tlc2.overrides;

/**
 * The index TLC reads to find Java definitions of TLA+ operators: TLC looks
 * this class up by name when it processes a spec, and replaces each operator
 * a listed class defines (by module and name) with its Java method.
 */
public final class TLCOverrides implements ITLCOverrides {
    @SuppressWarnings("rawtypes")
    @Override
    public Class[] get() {
        return new Class[] { tlasim.TraceData.class, tlasim.TraceStream.class };
    }
}
