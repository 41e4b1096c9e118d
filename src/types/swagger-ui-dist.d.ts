/** swagger-ui-dist ships no types; this is the one module of it the service loads (its index would load the 1.7 MB bundle into Node). */
declare module 'swagger-ui-dist/absolute-path.js' {
  /** The directory of the package's files. */
  function getAbsoluteFSPath(): string;
  export = getAbsoluteFSPath;
}
