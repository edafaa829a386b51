/**
 * Reading untrusted XML (Atom request bodies) and writing XML answers. Reading uses
 * fast-xml-parser, bounded: a size limit, a depth limit, no DTD at all (a document that
 * declares one is refused before parsing, so no entity can be defined or expanded; the five
 * predefined entities and character references still decode). Names are read by their
 * local part, whatever prefix a client chose (`i:type`, `p4:type`, `xsi:type` are all
 * `type`; `<d2p1:ActiveMessageCount>` is `ActiveMessageCount`), since the .NET, JS and
 * legacy clients each pick their own prefixes for the same namespaces.
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { BrokerError } from '../errors.js';

/** Atom bodies are a few KB; a rule with many parameters stays far below this. */
export const MAX_XML_BYTES = 256 * 1024;
export const MAX_XML_DEPTH = 32;

/** One element: its attributes (local names), its text, and its children in document order. */
export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  text: string;
  children: XmlElement[];
}

const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  removeNSPrefix: true,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  processEntities: true,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  maxNestedTags: MAX_XML_DEPTH,
});

const badXml = (why: string) => new BrokerError('BadRequest', `body: ${why}`, { field: 'body' });

/** Parses a document into its root element; 400 naming `body` for anything not plain, bounded, well-formed XML. */
export function parseXml(text: string): XmlElement {
  if (Buffer.byteLength(text, 'utf8') > MAX_XML_BYTES) throw badXml(`the XML document is larger than ${MAX_XML_BYTES} bytes`);
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) throw badXml('a document type declaration is not accepted');
  const valid = XMLValidator.validate(text);
  if (valid !== true) throw badXml(`is not well-formed XML (${valid.err.msg}, line ${valid.err.line})`);
  let nodes: unknown[];
  try {
    nodes = parser.parse(text) as unknown[];
  } catch (error) {
    throw badXml(`is not acceptable XML (${(error as Error).message})`);
  }
  const roots = nodes.map(toElement).filter((e): e is XmlElement => e !== undefined);
  if (roots.length !== 1) throw badXml('an XML document has exactly one root element');
  return roots[0]!;
}

type OrderedNode = Record<string, unknown> & { ':@'?: Record<string, unknown> };

function toElement(node: unknown): XmlElement | undefined {
  const n = node as OrderedNode;
  const name = Object.keys(n).find((k) => k !== ':@' && k !== '#text' && k !== '#comment');
  if (name === undefined) return undefined;
  const attributes: Record<string, string> = {};
  for (const [k, v] of Object.entries(n[':@'] ?? {})) {
    // Namespace declarations (`xmlns`, `xmlns:p4`) say nothing the local names need.
    if (k === 'xmlns' || k.startsWith('xmlns:')) continue;
    attributes[k] = String(v);
  }
  const content = (n[name] as unknown[] | undefined) ?? [];
  let text = '';
  const children: XmlElement[] = [];
  for (const child of content) {
    const c = child as OrderedNode;
    if ('#text' in c) text += String(c['#text']);
    else {
      const element = toElement(c);
      if (element) children.push(element);
    }
  }
  return { name, attributes, text: children.length > 0 ? text.trim() : text, children };
}

/** The first child of that local name, matched case-sensitively as the schemas spell them. */
export function child(element: XmlElement | undefined, name: string): XmlElement | undefined {
  return element?.children.find((c) => c.name === name);
}

/** The text of the first child of that name, or undefined. */
export function childText(element: XmlElement | undefined, name: string): string | undefined {
  return child(element, name)?.text;
}

/** Escapes text for element content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

/** `<name>text</name>`, the text escaped; nothing when the value is undefined. */
export function element(name: string, value: string | number | boolean | undefined): string {
  if (value === undefined) return '';
  return `<${name}>${escapeXml(String(value))}</${name}>`;
}
