//! One page of a list (`docs/design/outbound-api.md` §1.4): `limit` (50 unless given, at
//! most 250), `iterator` (where the previous page ended; one starting with `-` walks
//! back) and `order` (`ascending` / `descending`, on the lists that have it). Any other
//! query parameter is ignored: the SDKs send hosted-only ones (`expanded_statuses`,
//! `with_content`, …) that the routes read for themselves or not at all.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

use idemgate_store::outbound::{ListQuery, Order as StoreOrder, Page as StorePage};

use super::wire::ListResponse;
use crate::answer::OutboundAnswer;

/// `limit` when none is given.
pub(crate) const DEFAULT_LIMIT: u16 = 50;
/// The largest `limit`.
pub(crate) const MAX_LIMIT: u16 = 250;

/// A list's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// Oldest first.
    Ascending,
    /// Newest first.
    Descending,
}

/// One page asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Page {
    /// How many items at most.
    pub(crate) limit: u16,
    /// Where the previous page ended, as the caller gave it.
    pub(crate) iterator: Option<String>,
    /// The order asked for; `None`: the list's own.
    pub(crate) order: Option<Order>,
}

impl Page {
    /// The page a request's query asks for; a refusal names the parameter at fault
    /// (`["query","limit"]`) and never echoes its value.
    pub(crate) fn from_query(query: Option<&str>) -> Result<Self, OutboundAnswer> {
        let mut page = Self { limit: DEFAULT_LIMIT, iterator: None, order: None };
        for (name, value) in pairs(query.unwrap_or("")) {
            match name.as_ref() {
                "limit" => page.limit = limit(&value)?,
                "iterator" if !value.is_empty() => page.iterator = Some(value.into_owned()),
                "order" => page.order = Some(order(&value)?),
                _ => {}
            }
        }
        Ok(page)
    }
}

impl Page {
    /// The store's query for this page; `order` unless asked otherwise is ascending.
    pub(crate) fn list_query(&self) -> ListQuery {
        let order = match self.order {
            Some(Order::Descending) => StoreOrder::Descending,
            Some(Order::Ascending) | None => StoreOrder::Ascending,
        };
        ListQuery { limit: usize::from(self.limit), iterator: self.iterator.clone(), order }
    }
}

impl<U> ListResponse<U> {
    /// The store's page as the wire's, each row turned by `out`.
    pub(crate) fn of<T>(page: StorePage<T>, out: impl FnMut(T) -> U) -> Self {
        Self {
            data: page.data.into_iter().map(out).collect(),
            iterator: page.iterator,
            prev_iterator: page.prev_iterator,
            done: page.done,
        }
    }
}

fn limit(value: &str) -> Result<u16, OutboundAnswer> {
    let loc = ["query", "limit"];
    let limit: u64 = value
        .parse()
        .map_err(|_| OutboundAnswer::invalid(&loc, "value is not a valid integer", "type_error.integer"))?;
    match u16::try_from(limit) {
        Ok(limit) if limit <= MAX_LIMIT => Ok(limit),
        _ => Err(OutboundAnswer::invalid(&loc, format!("Given limit must not exceed {MAX_LIMIT}"), "value_error")),
    }
}

fn order(value: &str) -> Result<Order, OutboundAnswer> {
    match value {
        "ascending" => Ok(Order::Ascending),
        "descending" => Ok(Order::Descending),
        _ => Err(OutboundAnswer::invalid(
            &["query", "order"],
            "value is not a valid enumeration member; permitted: 'ascending', 'descending'",
            "type_error.enum",
        )),
    }
}

/// The `name=value` pairs of a query, `+` and percent escapes decoded.
pub(crate) fn pairs(query: &str) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    query.split('&').filter(|pair| !pair.is_empty()).map(|pair| {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        (decoded(name), decoded(value))
    })
}

fn decoded(text: &str) -> Cow<'_, str> {
    if !text.contains(['+', '%']) {
        return Cow::Borrowed(text);
    }
    let spaced = text.replace('+', " ");
    Cow::Owned(percent_decode_str(&spaced).decode_utf8_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn loc_of(answer: &OutboundAnswer) -> Option<Vec<String>> {
        match answer {
            OutboundAnswer::Invalid(items) => items.first().map(|item| item.loc.clone()),
            _ => None,
        }
    }

    #[test]
    fn a_page_is_fifty_unless_asked_and_unknown_parameters_are_ignored() {
        assert_eq!(Page::from_query(None), Ok(Page { limit: 50, iterator: None, order: None }));
        let query = "with_content=false&expanded_statuses=true&limit=250&iterator=app_2a%2Bb&order=ascending&tag=x";
        let page = Page::from_query(Some(query));
        assert_eq!(page, Ok(Page { limit: 250, iterator: Some("app_2a+b".into()), order: Some(Order::Ascending) }));
        assert_eq!(
            Page::from_query(Some("iterator=&order=descending")).map(|p| (p.iterator, p.order)),
            Ok((None, Some(Order::Descending)))
        );
    }

    #[test]
    fn a_limit_over_250_or_not_a_number_is_refused_at_its_loc() {
        for bad in ["limit=251", "limit=70000", "limit=-1", "limit=ten", "limit="] {
            let err = Page::from_query(Some(bad)).err();
            assert_eq!(err.as_ref().and_then(loc_of), Some(vec!["query".to_owned(), "limit".to_owned()]), "{bad}");
        }
        let err = Page::from_query(Some("limit=251")).err();
        let msg = match err {
            Some(OutboundAnswer::Invalid(items)) => json!(items[0].msg),
            _ => json!(null),
        };
        assert_eq!(msg, json!("Given limit must not exceed 250"));
        let err = Page::from_query(Some("order=sideways")).err();
        assert_eq!(err.as_ref().and_then(loc_of), Some(vec!["query".to_owned(), "order".to_owned()]));
    }
}
