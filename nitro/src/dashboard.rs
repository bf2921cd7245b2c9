//! The dashboard at `/`: a page, its script and style, and the vendored chart library
//! (uPlot, from npm; `assets/vendor/uplot/README`), all compiled into the binary. The page
//! logs in and reads the NITRO resources like any other client; serving it needs no session.

/// A file of the dashboard: its media type and bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asset {
    pub content_type: &'static str,
    pub body: &'static [u8],
}

const fn asset(content_type: &'static str, body: &'static [u8]) -> Asset {
    Asset { content_type, body }
}

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// Only the page's own files (and `data:` images: the empty favicon), no inline script, no
/// framing by another site.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'";

/// The file served at `path`, if the dashboard has one.
pub fn lookup(path: &str) -> Option<Asset> {
    Some(match path {
        "/" | "/index.html" => asset(HTML, include_bytes!("../assets/dashboard/index.html")),
        "/dashboard.js" => asset(JS, include_bytes!("../assets/dashboard/dashboard.js")),
        "/dashboard.css" => asset(CSS, include_bytes!("../assets/dashboard/dashboard.css")),
        "/uPlot.iife.min.js" => asset(
            JS,
            include_bytes!("../assets/vendor/uplot/uPlot.iife.min.js"),
        ),
        "/uPlot.min.css" => asset(CSS, include_bytes!("../assets/vendor/uplot/uPlot.min.css")),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_refers_only_to_files_that_are_served() {
        let page = std::str::from_utf8(lookup("/").unwrap().body).unwrap();
        let mut refs = 0;
        for attr in ["src=\"", "href=\""] {
            for (i, _) in page.match_indices(attr) {
                let rest = &page[i + attr.len()..];
                let url = &rest[..rest.find('"').unwrap()];
                if url.starts_with("data:") {
                    continue;
                }
                assert!(lookup(url).is_some(), "{url} is not served");
                refs += 1;
            }
        }
        assert_eq!(refs, 4);
        assert!(lookup("/nitro/v1/config").is_none());
        assert!(lookup("/../Cargo.toml").is_none());
    }
}
