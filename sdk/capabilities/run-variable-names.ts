/**
 * Which variable names an environment may give the runs in it. An environment is written by
 * whoever manages environments (the board, or an agent holding environments:manage), not
 * approved per agent like an adapter configuration, so its variables must not be able to change
 * what the board-approved command runs: which program a name finds (PATH), what the dynamic
 * loader or an interpreter loads before the program (LD_*, NODE_OPTIONS, PYTHONPATH, ...), what
 * a shell sources or runs on its own (BASH_ENV, ENV, PROMPT_COMMAND, BASH_FUNC_*), the
 * programs git or ssh start, and the kernel's own run values (SERVICE_*). One rule, applied by
 * the environments plugin when an environment is written (422) and by the kernel again when a
 * run starts in it.
 */
const REFUSED_NAMES = new Set([
  'PATH', 'HOME', 'SHELL', 'ENV', 'BASH_ENV', 'IFS', 'CDPATH', 'GLOBIGNORE', 'PS4', 'SHELLOPTS', 'BASHOPTS', 'PROMPT_COMMAND',
  'PWD', 'OLDPWD', 'TMPDIR', 'CLASSPATH', 'EDITOR', 'VISUAL', 'PAGER', 'SSH_ASKPASS', 'HOSTALIASES', 'LOCPATH', 'NLSPATH',
  'NODE_OPTIONS', 'NODE_PATH', 'NODE_EXTRA_CA_CERTS', 'NODE_TLS_REJECT_UNAUTHORIZED', 'NODE_REPL_EXTERNAL_MODULE', 'NODE_ICU_DATA',
  'RUBYOPT', 'RUBYLIB', 'PERLLIB', 'PERL5LIB', 'PERL5OPT', 'JAVA_TOOL_OPTIONS', '_JAVA_OPTIONS', 'JDK_JAVA_OPTIONS',
]);
const REFUSED_PREFIXES = ['SERVICE_', 'LD_', 'DYLD_', 'BASH_FUNC_', 'PYTHON', 'GIT_', 'GCONV_', 'MALLOC_', 'KEEL_'];

export const RUN_VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Why a run variable of an environment may not have this name, or null when it may. Case-insensitive. */
export function refusedRunVariable(name: string): string | null {
  if (!RUN_VARIABLE_NAME.test(name)) return 'is not a valid variable name';
  const upper = name.toUpperCase();
  if (upper.startsWith('SERVICE_')) return 'is a SERVICE_* name, which only the kernel and the runtime set';
  if (REFUSED_NAMES.has(upper) || REFUSED_PREFIXES.some((prefix) => upper.startsWith(prefix))) {
    return 'could change what the board-approved command runs (program search path, loader, interpreter or shell start-up)';
  }
  return null;
}
