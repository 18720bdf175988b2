//! Every relative link in the docs resolves. A link or image `[..](target)` (or a
//! reference definition `[..]: target`) in README.md, ARCHITECTURE.md, RELIABILITY.md,
//! BENCHMARKS.md or docs/**/*.md whose target is not a URL must name a file or folder that
//! exists relative to the page; an `#anchor` (alone, or after a Markdown page) must name a
//! heading of that page, by GitHub's rule for heading anchors. Code blocks and code spans
//! are not prose, so `a[i](x)` in an example is not a link.

use std::{
    fs,
    path::{Path, PathBuf},
};

/// The repository's root, two levels above this crate.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The pages checked: the four at the root and every Markdown file under `docs/`.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "RELIABILITY.md", "BENCHMARKS.md"]
        .iter()
        .map(|name| root.join(name))
        .collect();
    markdown_under(&root.join("docs"), &mut pages);
    pages
}

fn markdown_under(folder: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(folder).unwrap().map(|entry| entry.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            markdown_under(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "md") {
            found.push(path);
        }
    }
}

/// The page with its fenced and indented code blocks blanked (line numbers kept).
fn outside_code_blocks(markdown: &str) -> String {
    let mut fence: Option<String> = None;
    let mut previous_blank_or_code = true;
    let mut out = Vec::new();
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let opens = ["```", "~~~"].into_iter().find(|mark| trimmed.starts_with(mark));
        let is_code = if let Some(mark) = &fence {
            if trimmed.starts_with(mark.as_str()) {
                fence = None;
            }
            true
        } else if let (Some(mark), true) = (opens, indent < 4) {
            fence = Some(mark.to_owned());
            true
        } else {
            indent >= 4 && previous_blank_or_code && !trimmed.is_empty()
        };
        previous_blank_or_code = is_code || trimmed.is_empty();
        out.push(if is_code { "" } else { line });
    }
    out.join("\n")
}

/// `text` without its code spans (a run of n backticks up to the next run of exactly n,
/// within one paragraph); newlines inside a span are kept.
fn without_code_spans(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let run_at = |at: usize| chars[at..].iter().take_while(|c| **c == '`').count();
    let mut out = String::new();
    let mut at = 0;
    while at < chars.len() {
        if chars[at] != '`' {
            out.push(chars[at]);
            at += 1;
            continue;
        }
        let opening = run_at(at);
        let mut end = None;
        let mut look = at + opening;
        while look < chars.len() {
            if chars[look] == '\n' && chars.get(look + 1) == Some(&'\n') {
                break;
            }
            if chars[look] == '`' {
                let closing = run_at(look);
                if closing == opening {
                    end = Some(look + closing);
                    break;
                }
                look += closing;
            } else {
                look += 1;
            }
        }
        match end {
            Some(end) => {
                out.extend(chars[at..end].iter().filter(|c| **c == '\n'));
                at = end;
            }
            None => {
                out.extend(&chars[at..at + opening]);
                at += opening;
            }
        }
    }
    out
}

/// Each link target in the prose, with its line number: inline links and images
/// `](target)`, and reference definitions `[label]: target`.
fn link_targets(prose: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    for (index, line) in prose.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            targets.push((index + 1, inline_target(after)));
            rest = after;
        }
        let definition = line.trim_start();
        if line.len() - definition.len() < 4
            && definition.starts_with('[')
            && let Some((_, target)) = definition.split_once("]:")
            && let Some(target) = target.split_whitespace().next()
        {
            targets.push((index + 1, target.trim_matches(['<', '>']).to_owned()));
        }
    }
    targets
}

/// The target at the start of `after` (what follows `](`): up to the unbalanced `)` or
/// the title, or between `<` and `>`.
fn inline_target(after: &str) -> String {
    let after = after.trim_start();
    if let Some(bracketed) = after.strip_prefix('<') {
        return bracketed.split('>').next().unwrap_or_default().to_owned();
    }
    let mut depth = 0;
    let end = after
        .char_indices()
        .find(|(_, c)| match c {
            '(' => {
                depth += 1;
                false
            }
            ')' if depth == 0 => true,
            ')' => {
                depth -= 1;
                false
            }
            c => c.is_whitespace(),
        })
        .map_or(after.len(), |(at, _)| at);
    after[..end].to_owned()
}

/// Whether `target` starts with a URL scheme (`https:`, `mailto:`, …).
fn is_url(target: &str) -> bool {
    target.split_once(':').is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    })
}

/// The anchors GitHub gives a page's headings: the text lowercased, without punctuation
/// (code spans and emphasis keep their text), spaces as `-`, repeats numbered `-1`, `-2`.
fn anchors(markdown: &str) -> Vec<String> {
    let mut slugs: Vec<String> = Vec::new();
    let mut anchors: Vec<String> = Vec::new();
    for line in outside_code_blocks(markdown).lines() {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        let Some(text) = line.get(hashes..).and_then(|rest| rest.strip_prefix(' ')) else {
            continue;
        };
        if !(1..=6).contains(&hashes) {
            continue;
        }
        let text = text.trim().trim_end_matches('#').trim();
        let slug: String = text
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .flat_map(char::to_lowercase)
            .collect();
        let repeats = slugs.iter().filter(|seen| **seen == slug).count();
        anchors.push(if repeats == 0 { slug.clone() } else { format!("{slug}-{repeats}") });
        slugs.push(slug);
    }
    anchors
}

/// What is wrong with `target`, linked from `page`, if anything.
fn check_target(root: &Path, page: &Path, target: &str) -> Option<String> {
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    if path.is_empty() {
        let headings = anchors(&fs::read_to_string(page).ok()?);
        return (!headings.iter().any(|known| known == anchor)).then(|| format!("no heading #{anchor} on this page"));
    }
    let base = if path.starts_with('/') { root.to_path_buf() } else { page.parent()?.to_path_buf() };
    let resolved = base.join(path.trim_start_matches('/'));
    if !resolved.exists() {
        return Some(format!("no file {}", resolved.display()));
    }
    let is_page = resolved.extension().is_some_and(|ext| ext == "md");
    if anchor.is_empty() || !is_page {
        return None;
    }
    let headings = anchors(&fs::read_to_string(&resolved).ok()?);
    (!headings.iter().any(|known| known == anchor)).then(|| format!("no heading #{anchor} in {}", resolved.display()))
}

/// Every broken relative link of `page`, as `page:line: target: why`; and how many
/// relative links it has.
fn broken_links(root: &Path, page: &Path) -> (Vec<String>, usize) {
    let markdown = fs::read_to_string(page).unwrap();
    let prose = without_code_spans(&outside_code_blocks(&markdown));
    let relative: Vec<(usize, String)> =
        link_targets(&prose).into_iter().filter(|(_, target)| !target.is_empty() && !is_url(target)).collect();
    let shown = page.strip_prefix(root).unwrap_or(page).display();
    let broken = relative
        .iter()
        .filter_map(|(line, target)| {
            check_target(root, page, target).map(|why| format!("{shown}:{line}: {target}: {why}"))
        })
        .collect();
    (broken, relative.len())
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = repo_root();
    let pages = pages(&root);
    assert!(pages.iter().any(|page| page.ends_with("docs/guide/README.md")), "{pages:?}");
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let (mut found, links) = broken_links(&root, page);
        broken.append(&mut found);
        checked += links;
    }
    assert!(checked >= 30, "only {checked} relative links found in {} pages", pages.len());
    assert!(broken.is_empty(), "broken links in the docs:\n{}", broken.join("\n"));
}

#[test]
fn the_link_check_reports_missing_files_and_headings_and_skips_urls_and_code() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("docs/guide")).unwrap();
    fs::write(root.join("docs/guide/there.md"), "# There\n\n## The `send` command\n").unwrap();
    let page = root.join("docs/guide/page.md");
    let text = "# Page\n\n[ok](there.md#the-send-command) ![img](../guide/there.md) \
        [gone](missing.md) [bad anchor](there.md#nowhere)\n\
        [url](https://example.com/x.md) [self](#page) [lost](#nowhere) `[code](nothing.md)`\n\n    \
        [indented](code.md)\n\n```\n[fenced](code.md)\n```\n\n[ref]: /docs/guide/absent.md\n";
    fs::write(&page, text).unwrap();
    let (broken, links) = broken_links(root, &page);
    assert_eq!(links, 7, "{broken:?}");
    let targets: Vec<&str> = broken.iter().map(|line| line.split(": ").nth(1).unwrap_or_default()).collect();
    assert_eq!(targets, ["missing.md", "there.md#nowhere", "#nowhere", "/docs/guide/absent.md"], "{broken:?}");
}
