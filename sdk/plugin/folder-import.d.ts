/**
 * `import files from './some-folder?files'`: every regular file under a folder of the plugin,
 * read at build time (sdk/build/folder-imports.ts), sorted by path. UTF-8 text comes as
 * `text`, other bytes as `base64`.
 */
declare module '*?files' {
  const files: ReadonlyArray<{ readonly path: string; readonly text?: string; readonly base64?: string }>;
  export default files;
}
