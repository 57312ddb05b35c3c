//! The check every pod a tenant sends passes before anything is committed: each container's
//! image comes from a registry the operator lists (`--image-registry-allow`) whose host the
//! egress policy lets a call on the tenant's behalf reach (`--tenant-egress-allow`) — an address
//! by [`drover_model::image_policy::check_image`], a name on what it resolves to now, as
//! [`crate::agents::egress_refused`] judges any target (a name that does not resolve yet is
//! accepted). Each dialect answers the refusal in its own shape, naming the field.

use drover_model::cluster::image::ImageRef;
use drover_model::egress::{CallHost, EgressPolicy};
use drover_model::image_policy::{check_image, ImageField, ImageRefused, RegistryAllow};

/// The first of `images` that may not be pulled: its field and why.
pub async fn first_refused(
    allow: &RegistryAllow,
    egress: &EgressPolicy,
    images: Vec<ImageField>,
) -> Option<(String, String)> {
    // A registry's name is resolved once per request, however many images name it.
    let mut names_judged: Vec<(String, Option<String>)> = Vec::new();
    for (field, image) in images {
        let target = match check_image(&image, allow, egress) {
            Err(refused) => return Some((field, refused.to_string())),
            Ok(None) => continue,
            Ok(Some(target)) => target,
        };
        let CallHost::Name(name) = target.host() else {
            continue;
        };
        let why = match names_judged.iter().find(|(judged, _)| judged == name) {
            Some((_, why)) => why.clone(),
            None => {
                let why = crate::agents::egress_refused(egress, target.url().as_str()).await;
                names_judged.push((name.clone(), why.clone()));
                why
            }
        };
        if let Some(why) = why {
            let registry = ImageRef::parse(&image).map(|r| r.registry).unwrap_or_default();
            return Some((field, ImageRefused::Egress { image, registry, why }.to_string()));
        }
    }
    None
}
