/**
 * Checks that every relative link and every repository path the documents and code comments name
 * exists: Markdown links (and their #anchors) in README.md, docs/ and the READMEs under test/, and
 * the paths named in those pages and in the comments of the code, tests and tools.
 *
 *   node tools/check-links.mjs [--root=<folder>]    # exits 1 and lists each wrong name
 *
 * A name is checked when it is a relative link, starts with one of the repository's top-level
 * folders, or ends with one of the repository's file extensions (then some file must end with it:
 * `generate/verdict.ts`, `retry.md`). Names of n8n's own files and of files outside the repository
 * that the comments mention on purpose are listed in EXTERNAL, each with its reason.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', '.git', 'coverage']);
const CODE = /\.(ts|mjs|cjs|js)$/;
const EXTENSIONS = 'ts|mjs|cjs|js|md|json|svg|png|yml|sh';
const PATH_TOKEN = new RegExp(
	String.raw`(?<![\w/.@$~-])((?:\.{1,2}/)*(?:[\w@.{},*-]+/)*[\w@{},*-][\w.@{},*-]*(?:\.(?:${EXTENSIONS})|/))(?![\w/])`,
	'g',
);

/** Names that are not this repository's, on purpose. */
const EXTERNAL = new Map([
	['Node.js', 'the runtime, not a file'],
	['claude_desktop_config.json', "Claude Desktop's configuration file"],
	['credentials-tester.service.ts', "n8n's source, where the credential test is run"],
	['types/nodes.json', 'the node types n8n writes into its user folder'],
	['package/package.json', 'the manifest inside an npm tarball'],
	['command.json', 'the file the bench writes for its profiler inside n8n, at run time'],
	['out.png', "the emulator README's example command's output"],
]);

/** n8n's compiled files (`…/dist/….js`, `workflow-execute.js`) are named where the code builds on what they do. */
const isN8nFile = (name) =>
	name.endsWith('.js') && !name.startsWith('./') && !name.startsWith('../');

export function checkLinks(root) {
	const files = walk(root);
	const relativeFiles = files.map((file) => path.relative(root, file).split(path.sep).join('/'));
	const known = new Set(relativeFiles);
	const folders = new Set(
		relativeFiles.flatMap((file) =>
			file
				.split('/')
				.slice(0, -1)
				.map((_, i, parts) => parts.slice(0, i + 1).join('/')),
		),
	);
	const topLevel = new Set(fs.readdirSync(root).filter((name) => !SKIPPED_FOLDERS.has(name)));
	const problems = [];

	const exists = (relative) => known.has(relative) || folders.has(relative.replace(/\/$/, ''));
	const endsWith = (name) => {
		const bare = name.replace(/^(\.{1,2}\/)+/, '').replace(/\/$/, '');
		return (
			relativeFiles.some((file) => file === bare || file.endsWith(`/${bare}`)) ||
			[...folders].some((folder) => folder === bare || folder.endsWith(`/${bare}`))
		);
	};

	for (const file of files) {
		const relative = path.relative(root, file).split(path.sep).join('/');
		const isMarkdown = relative.endsWith('.md');
		if (isMarkdown && !isCheckedPage(relative)) continue;
		if (!isMarkdown && !CODE.test(relative) && relative !== '.ci/run') continue;
		const text = fs.readFileSync(file, 'utf8');
		const report = (line, name, why) => {
			const problem = `${relative}:${line}: ${name}: ${why}`;
			if (!problems.includes(problem)) problems.push(problem);
		};

		if (isMarkdown) {
			for (const { line, target } of markdownLinks(text)) {
				if (/^[a-z][\w+.-]*:/i.test(target)) continue; // a URL
				const [pathPart, anchor] = target.split('#');
				const resolved = pathPart
					? path.posix.normalize(path.posix.join(path.posix.dirname(relative), decodeURI(pathPart)))
					: relative;
				if (resolved.startsWith('../')) report(line, target, 'points outside the repository');
				else if (!exists(resolved)) report(line, target, 'no such file');
				else if (
					anchor &&
					resolved.endsWith('.md') &&
					!anchorsOf(path.join(root, resolved)).has(anchor)
				)
					report(line, target, `no heading #${anchor}`);
			}
		}
		// In a page, a link's target is checked as a link above, not again as a named path.
		const named = isMarkdown ? text.replace(/\]\([^)]*\)/g, ']') : comments(text, relative);
		for (const { line, name } of namedPaths(named)) {
			if (
				EXTERNAL.has(name) ||
				[...EXTERNAL.keys()].some(
					(external) => name.endsWith(`/${external}`) || name.includes(external),
				)
			)
				continue;
			if (/[<>*]|\{\{|\$/.test(name)) continue; // a placeholder or a pattern
			if (isN8nFile(name) && !topLevel.has(name.split('/')[0])) continue;
			const first = name.split('/')[0];
			for (const expanded of expandBraces(name)) {
				if (expanded.startsWith('./') || expanded.startsWith('../')) {
					const resolved = path.posix.normalize(
						path.posix.join(path.posix.dirname(relative), expanded),
					);
					if (resolved.startsWith('../')) report(line, name, 'points outside the repository');
					else if (!exists(resolved) && !endsWith(expanded)) report(line, name, 'no such file');
				} else if (expanded.includes('/') && topLevel.has(first)) {
					if (!exists(expanded)) report(line, name, 'no such file');
				} else if (new RegExp(`\\.(${EXTENSIONS})$`).test(expanded) && !endsWith(expanded)) {
					report(line, name, 'no file of that name in the repository');
				}
			}
		}
	}
	return problems;
}

function isCheckedPage(relative) {
	return (
		relative === 'README.md' ||
		relative.startsWith('docs/') ||
		(relative.startsWith('test/') && relative.endsWith('README.md'))
	);
}

function walk(folder) {
	return fs.readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
		if (SKIPPED_FOLDERS.has(entry.name)) return [];
		const full = path.join(folder, entry.name);
		return entry.isDirectory() ? walk(full) : [full];
	});
}

/** `[text](target)` and `![alt](target)`, with their line numbers; code spans and fences left out. */
function markdownLinks(text) {
	const links = [];
	let fenced = false;
	text.split('\n').forEach((content, index) => {
		if (/^\s*```/.test(content)) fenced = !fenced;
		if (fenced) return;
		for (const match of content
			.replace(/`[^`]*`/g, '')
			.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
			links.push({ line: index + 1, target: match[1] });
		}
	});
	return links;
}

/** The ids a page's headings (GitHub's slugs) and its `<a id>` tags give. */
const anchorCache = new Map();
function anchorsOf(file) {
	if (anchorCache.has(file)) return anchorCache.get(file);
	const anchors = new Set();
	const seen = new Map();
	let fenced = false;
	for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
		if (/^\s*```/.test(line)) fenced = !fenced;
		if (fenced) continue;
		const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
		if (heading) {
			const slug = heading[1]
				.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
				.toLowerCase()
				.replace(/[^\p{L}\p{N}\s_-]/gu, '')
				.replace(/\s/g, '-');
			const count = seen.get(slug) ?? 0;
			seen.set(slug, count + 1);
			anchors.add(count ? `${slug}-${count}` : slug);
		}
		for (const match of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]);
	}
	anchorCache.set(file, anchors);
	return anchors;
}

/** The comment text of a source file, other characters blanked so line numbers stay. */
function comments(text, relative) {
	if (relative === '.ci/run')
		return text.replace(/^(?!\s*#|.*\s#\s).*$/gm, '').replace(/^.*?\s#\s/gm, '');
	const kept = text.replace(/[^\n]/g, ' ').split('');
	for (const match of text.matchAll(/\/\*[\s\S]*?\*\/|(?<=^|\s)\/\/[^\n]*/g)) {
		for (let i = match.index; i < match.index + match[0].length; i++) kept[i] = text[i];
	}
	return kept.join('');
}

function namedPaths(text) {
	const names = [];
	text.split('\n').forEach((content, index) => {
		for (const match of content.matchAll(PATH_TOKEN)) {
			const name = match[1].replace(/[.,]+$/, '');
			if (content[match.index - 1] === '<') continue; // a placeholder such as <file.json>
			if (!/[a-z]/i.test(name) || /^\.+\/?$/.test(name)) continue; // `1K/2K/`, `../`
			names.push({ line: index + 1, name: name.replace(/\/$/, '') || name });
		}
	});
	return names;
}

function expandBraces(name) {
	const match = /\{([^{}]*)\}/.exec(name);
	if (!match) return [name];
	return match[1]
		.split(',')
		.flatMap((part) =>
			expandBraces(name.slice(0, match.index) + part + name.slice(match.index + match[0].length)),
		);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
	const rootArgument = process.argv.find((arg) => arg.startsWith('--root='));
	const root = path.resolve(
		rootArgument
			? rootArgument.slice('--root='.length)
			: path.join(path.dirname(fileURLToPath(import.meta.url)), '..'),
	);
	const problems = checkLinks(root);
	for (const problem of problems) console.error(problem);
	console.log(
		problems.length ? `${problems.length} wrong name(s)` : 'every link and named path exists',
	);
	process.exitCode = problems.length ? 1 : 0;
}
