//! What a metric's label shows for a destination or a source that the outbound API made:
//! an endpoint's or an application's id would make one time series per customer, so they
//! are folded into one value, [`API`], unless the operator asks for one series per
//! endpoint (`[api] metrics_per_endpoint`). Application ids are never a label.

use super::id::EndpointId;

/// The one label value of every endpoint (and every application) when they are folded.
pub const API: &str = "api";

/// How endpoints show in the `destination` label of the worker's and gateway's metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EndpointLabels {
    /// Every endpoint as [`API`] (the default).
    #[default]
    Folded,
    /// Each endpoint by its id (`[api] metrics_per_endpoint = true`).
    PerEndpoint,
}

impl EndpointLabels {
    /// The setting for `per_endpoint`.
    #[must_use]
    pub fn of(per_endpoint: bool) -> Self {
        if per_endpoint { Self::PerEndpoint } else { Self::Folded }
    }

    /// The label of the destination named `destination`: a configured destination by its
    /// name, an endpoint (`ep_…`) as this setting says.
    ///
    /// ```
    /// use idemgate_core::outbound::label::{API, EndpointLabels};
    /// assert_eq!(EndpointLabels::Folded.destination("ep_2aSpRbSEq4Hmp4yeztwBqfXEBDe"), API);
    /// assert_eq!(EndpointLabels::Folded.destination("orders"), "orders");
    /// ```
    #[must_use]
    pub fn destination(self, destination: &str) -> &str {
        match self {
            Self::Folded if EndpointId::is_id_text(destination) => API,
            _ => destination,
        }
    }
}

/// The label of the receipt source `source`: a configured source by its name, the source
/// of an application's messages (`app_…`, which configured names may not start with) as
/// [`API`].
#[must_use]
pub fn source(source: &str) -> &str {
    if source.starts_with("app_") { API } else { source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_fold_into_one_label_unless_asked_for_and_applications_always_do() {
        let ep = "ep_2aSpRbSEq4Hmp4yeztwBqfXEBDe";
        assert_eq!(EndpointLabels::default().destination(ep), API);
        assert_eq!(EndpointLabels::of(true).destination(ep), ep);
        assert_eq!(EndpointLabels::of(false).destination("billing"), "billing");
        assert_eq!(EndpointLabels::of(true).destination("billing"), "billing");
        assert_eq!(source("app_0123abcd"), API);
        assert_eq!(source("stripe"), "stripe");
    }
}
