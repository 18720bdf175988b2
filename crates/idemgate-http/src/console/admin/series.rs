//! The window of the `…/series` routes (rejections, conflicts, a destination's attempts).

use serde::Deserialize;
use utoipa::IntoParams;

use crate::console::views::Window;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct SeriesQuery {
    /// `hour` (the default: per minute) or `day` (per half hour), up to now.
    #[param(inline)]
    pub(super) window: Option<Window>,
}
