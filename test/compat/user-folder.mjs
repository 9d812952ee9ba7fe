/**
 * How the compatibility suite gets an n8n user folder with the packed package in it. One function, so
 * that the install path under test can be swapped (today: unpacked as n8n installs a community
 * package, like the e2e suites; the README's `npm install` and n8n's installer are tested apart).
 */
import { createUserFolder } from '../e2e/n8n.mjs';

/** A fresh user folder holding the tarball's package: { dir, n8nDir, packageDir, cleanup() }. */
export async function prepareUserFolder({ tarball }) {
	return createUserFolder({ tarball });
}
